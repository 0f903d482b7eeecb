//! `model.kind`: which family a config's model is, by the name configs write.
//!
//! The configuration knows the kinds by name only; each family registers against its kind in
//! `engine::families` (`ModelKind::family`), whose match over every kind fails to compile when a
//! kind has no family. Adding a family is a line here and a line there.

use serde::{Deserialize, Serialize};

macro_rules! model_kinds {
    ($($(#[$doc:meta])* $variant:ident = $name:literal;)*) => {
        #[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
        pub enum ModelKind {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl ModelKind {
            /// Every kind, in the registry's order.
            pub const ALL: &'static [ModelKind] = &[$(Self::$variant,)*];
            /// Their names as configs write them.
            pub const NAMES: &'static [&'static str] = &[$($name,)*];

            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }
        }
    };
}

model_kinds! {
    Mlp = "mlp";
    Cnn = "cnn";
    Gru = "gru";
    Lstm = "lstm";
    Transformer = "transformer";
    /// A Llama-style decoder: RMSNorm, a SwiGLU feed-forward, rotary positions,
    /// grouped-query attention, tied or untied output (Llama, Mistral, Qwen2 shapes).
    Llama = "llama";
    /// Qwen3: the llama with per-head query and key norms and heads of their own width.
    Qwen3 = "qwen3";
    /// Gemma 2: the llama with Gemma's norms, GeGLU and scaled embeddings, a window in every
    /// other layer and soft-capped logits.
    Gemma2 = "gemma2";
    /// Gemma 3: Gemma 2's blocks with query and key norms and windowed layers of their own
    /// rotary base.
    Gemma3 = "gemma3";
    /// Phi-3: the llama with Q, K and V in one matrix and the gate and up in another.
    Phi3 = "phi3";
    /// Mixtral: Mistral's blocks with a router over SwiGLU experts, a few of them a token.
    Mixtral = "mixtral";
    /// Qwen3-MoE: Qwen3's attention with Mixtral's router over narrow SwiGLU experts.
    Qwen3Moe = "qwen3_moe";
}
