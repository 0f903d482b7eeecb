//! The published Hugging Face config.json files vramlab ships (tests/data/hf, each with its
//! source in that folder's README), for "Will it fit?" to plan without a file at hand.

/// One shipped config.json: the model's name on the panel, the file's name, its text.
macro_rules! shipped {
    ($label:literal, $file:literal) => {
        (
            $label,
            $file,
            include_str!(concat!("../../tests/data/hf/", $file)),
        )
    };
}

pub const PUBLISHED: [(&str, &str, &str); 14] = [
    shipped!("GPT-2 small", "gpt2.json"),
    shipped!("TinyLlama-1.1B-Chat-v1.0", "tinyllama-1.1b-chat-v1.0.json"),
    shipped!("Qwen2-0.5B", "qwen2-0.5b.json"),
    shipped!("Qwen3-0.6B", "qwen3-0.6b.json"),
    shipped!("Gemma-3-1B", "gemma-3-1b.json"),
    shipped!("Gemma-2-2B", "gemma-2-2b.json"),
    shipped!("Phi-3-mini-4k-instruct", "phi-3-mini-4k.json"),
    shipped!("Llama-2-7B", "llama-2-7b.json"),
    shipped!("Mistral-7B-v0.1", "mistral-7b-v0.1.json"),
    shipped!("Llama-3.1-8B-Instruct", "llama-3.1-8b-instruct.json"),
    shipped!("Qwen3-8B", "qwen3-8b.json"),
    shipped!("Qwen3-30B-A3B", "qwen3-30b-a3b.json"),
    shipped!("Mixtral-8x7B-v0.1", "mixtral-8x7b-v0.1.json"),
    shipped!("Llama-3.1-70B-Instruct", "llama-3.1-70b-instruct.json"),
];
