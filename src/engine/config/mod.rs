//! The experiment configuration: one serde struct that the CLI, the presets and the page's URL
//! state all read and write. Plain data: nothing here touches the GPU.
//!
//! Field names are a contract: `--set model.hidden=[128,128]`, the JSON files and the URL use them.
//! Every field has a default so a partial JSON file is a complete config; validation
//! (`engine::validate`) then checks each field against its allowed range and names the field
//! when it refuses one.

mod budget;
mod model_kind;

use serde::{Deserialize, Serialize};

pub use budget::{BUDGET_FORMS, Budget};
pub use model_kind::ModelKind;

use super::error::ConfigError;
use super::table::SharedTable;

/// Upper bounds shared by validation and documentation. Chosen so that no single tensor of a
/// valid config can exceed what lavapipe (about 128 MiB per buffer) or a browser can allocate
/// before the memory budget (a later feature) gets a say.
pub mod limits {
    pub const BATCH_SIZE: (usize, usize) = (1, 65_536);
    pub const STEPS: (usize, usize) = (1, 1_000_000);
    pub const SAMPLES: (usize, usize) = (16, 1_000_000);
    /// Sequence lengths and vocabularies up to those of real language models: a plan needs no
    /// data, and a run's data is bounded by [`HOST_TOKENS`] instead. `SEQ_LEN` bounds the
    /// query tasks (each sample twice `seq_len`: 8,192 tokens at most), `STREAM_SEQ_LEN` a
    /// token stream (a sample is `seq_len` tokens: the context lengths people fine-tune at).
    pub const SEQ_LEN: (usize, usize) = (2, 4096);
    pub const STREAM_SEQ_LEN: (usize, usize) = (2, 32_768);
    pub const VOCAB: (usize, usize) = (2, 262_144);
    /// Tokens a run may generate in host memory (`samples x` tokens per sample): 256 MiB of
    /// ids.
    pub const HOST_TOKENS: usize = 1 << 25;
    pub const WIDTH: (usize, usize) = (1, 8192);
    /// Feed-forward widths (a 70B model's SwiGLU is 28,672 wide).
    pub const FF: (usize, usize) = (1, 65_536);
    pub const LAYERS: (usize, usize) = (1, 96);
    pub const HIDDEN_LAYERS: (usize, usize) = (0, 16);
    pub const HEADS: (usize, usize) = (1, 128);
    /// Experts in a block (Qwen3-MoE's 128, DeepSeek-V3's 256).
    pub const EXPERTS: (usize, usize) = (1, 512);
    /// Token-table rows and learned positions a model may state beyond its data's own.
    pub const MODEL_VOCAB: (usize, usize) = (2, 262_144);
    pub const POSITIONS: (usize, usize) = (2, 131_072);
    pub const LORA_RANK: (usize, usize) = (1, 1024);
    pub const LORA_ALPHA: (f64, f64) = (1e-3, 1e4);
    pub const ROPE_THETA: (f64, f64) = (1.0, 1e9);
    pub const NORM_EPS: (f64, f64) = (1e-12, 1e-2);
    /// A soft cap on logits (0 in the config: none).
    pub const SOFTCAP: (f64, f64) = (1e-3, 1e6);
    pub const CHANNELS: (usize, usize) = (1, 512);
    pub const LEARNING_RATE: (f64, f64) = (1e-7, 10.0);
    /// GPUs a sharded run is planned across (a 1,024-GPU run shards a 405B model's
    /// parameters to under a GiB a GPU; more is past anything vramlab's plans were checked at).
    pub const GPUS: (usize, usize) = (1, 1024);
    pub const NOISE: (f64, f64) = (0.0, 1.0);
    pub const TEST_FRACTION: (f64, f64) = (0.05, 0.9);
}

/// One experiment: what to train, on what, how, and what to record.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// A label for reports; presets use their own name.
    pub name: String,
    pub data: DataConfig,
    pub model: ModelConfig,
    pub optimizer: OptimizerKind,
    pub learning_rate: f64,
    /// Training samples per optimizer step.
    pub batch_size: usize,
    /// Samples per forward pass while evaluating the test split.
    pub eval_batch_size: usize,
    pub steps: usize,
    /// Evaluate on the test split every this many steps (0: only once, at the end).
    pub eval_every: usize,
    /// Batches of `eval_batch_size` each evaluation reads, from the start of the test split
    /// (0: the whole split). A language model's split is thousands of sequences (the presets
    /// hold out 1,024 of 2,048 tokens): evaluating it whole takes longer than short runs train.
    pub eval_batches: usize,
    pub seed: u64,
    /// When to read the allocator: after every phase and at every kernel launch (exact per-phase
    /// picture, breaks fusion across phases) or once per step (cheap).
    pub memory_sampling: MemorySampling,
    /// The memory-saving strategies, one field each.
    pub strategies: Strategies,
    /// GPUs the run is spread over (`--gpus N`): a plan is one GPU's share of it, by
    /// `strategies.sharding`. Real runs use one.
    pub gpus: usize,
    /// Run as if the GPU had only this much memory: bytes, or a share of the adapter's limit.
    /// Written out as `null` when unset, so `--set budget=...` finds the field.
    pub budget: Option<Budget>,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            name: "custom".into(),
            data: DataConfig::default(),
            model: ModelConfig::default(),
            optimizer: OptimizerKind::Adam,
            learning_rate: 0.01,
            batch_size: 256,
            eval_batch_size: 512,
            steps: 100,
            eval_every: 50,
            eval_batches: 4,
            seed: 42,
            memory_sampling: MemorySampling::Phase,
            strategies: Strategies::default(),
            gpus: 1,
            budget: None,
        }
    }
}

/// The data set and its generator's knobs. Fields that a kind does not use are ignored.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DataConfig {
    pub kind: DataKind,
    /// Generated samples (train + test); ignored for `digits`, which has 1,797.
    pub samples: usize,
    /// Noise of the 2-D sets, as a fraction of the playground's maximum.
    pub noise: f64,
    /// Fraction of the samples held out for evaluation.
    pub test_fraction: f64,
    /// Tokens per sample of `stream`; for the query tasks (`copy`, `reverse`, `sort`) the
    /// tokens of the input sequence, which the model sees followed by as many query tokens
    /// ([`DataConfig::sample_tokens`]).
    pub seq_len: usize,
    /// Distinct tokens of the token tasks (the query tasks add their query token).
    pub vocab: usize,
    /// `csv`: the file the table is read from (in a config file, relative to that file).
    pub path: String,
    /// `csv`: the label column, by name or 1-based position; empty: the last column.
    #[serde(deserialize_with = "name_or_position")]
    pub label: String,
    /// `csv`: the table itself, read by the front from `path` (the engine reads no files).
    /// Never serialised: a config names its data, it does not carry it.
    #[serde(skip)]
    pub table: Option<SharedTable>,
}

/// `data.label` as text, also when written as a number (`--set data.label=5`, `"label": 5`).
fn name_or_position<'de, D: serde::Deserializer<'de>>(de: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Label {
        Name(String),
        Position(u64),
    }
    Ok(match Label::deserialize(de)? {
        Label::Name(name) => name,
        Label::Position(position) => position.to_string(),
    })
}

impl DataConfig {
    /// What shape of input the data set hands a model: a table's follows its width (two
    /// features are points, 64 are 8x8 images, any other width a row of features).
    pub fn input_kind(&self) -> InputKind {
        match (&self.table, self.kind) {
            (Some(table), DataKind::Csv) => match table.width() {
                2 => InputKind::Points,
                64 => InputKind::Images,
                _ => InputKind::Features,
            },
            (_, kind) => kind.input_kind(),
        }
    }

    /// Tokens a model reads per sample of a token task: a stream's `seq_len`; a query task's
    /// `seq_len` input tokens and as many query tokens.
    pub fn sample_tokens(&self) -> usize {
        match self.kind {
            DataKind::Stream => self.seq_len,
            _ => 2 * self.seq_len,
        }
    }

    /// Distinct token ids a token task's samples hold: a stream's `vocab`; a query task's
    /// `vocab` and its query token.
    pub fn token_ids(&self) -> usize {
        match self.kind {
            DataKind::Stream => self.vocab,
            _ => self.vocab + 1,
        }
    }

    /// The range `data.seq_len` may take for this kind.
    pub fn seq_len_limits(&self) -> (usize, usize) {
        match self.kind {
            DataKind::Stream => limits::STREAM_SEQ_LEN,
            _ => limits::SEQ_LEN,
        }
    }
}

impl Default for DataConfig {
    fn default() -> Self {
        Self {
            kind: DataKind::Spiral,
            samples: 4096,
            noise: 0.1,
            test_fraction: 0.25,
            seq_len: 8,
            vocab: 8,
            path: String::new(),
            label: String::new(),
            table: None,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DataKind {
    Circle,
    Xor,
    Gauss,
    Spiral,
    Digits,
    Copy,
    Reverse,
    Sort,
    /// A synthetic token stream a language model predicts the next token of: `seq_len` tokens
    /// per sample, drawn from a fixed random Markov chain (decoders only).
    Stream,
    /// A table the user brings (`data.path`, `data.label`).
    Csv,
}

impl DataKind {
    /// The built-in data sets (a table needs its file).
    pub const ALL: [DataKind; 9] = [
        Self::Circle,
        Self::Xor,
        Self::Gauss,
        Self::Spiral,
        Self::Digits,
        Self::Copy,
        Self::Reverse,
        Self::Sort,
        Self::Stream,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Circle => "circle",
            Self::Xor => "xor",
            Self::Gauss => "gauss",
            Self::Spiral => "spiral",
            Self::Digits => "digits",
            Self::Copy => "copy",
            Self::Reverse => "reverse",
            Self::Sort => "sort",
            Self::Stream => "stream",
            Self::Csv => "csv",
        }
    }

    /// What shape of input the data set hands a model ([`DataConfig::input_kind`] knows a
    /// table's width).
    pub fn input_kind(self) -> InputKind {
        match self {
            Self::Circle | Self::Xor | Self::Gauss | Self::Spiral => InputKind::Points,
            Self::Digits => InputKind::Images,
            Self::Copy | Self::Reverse | Self::Sort | Self::Stream => InputKind::Tokens,
            Self::Csv => InputKind::Features,
        }
    }
}

/// The input families; models declare which they accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// 2-D points, `[batch, 2]`.
    Points,
    /// 8x8 grey images, `[batch, 1, 8, 8]` (an MLP sees them flattened).
    Images,
    /// Token sequences, `[batch, tokens per sample]` ([`DataConfig::sample_tokens`]).
    Tokens,
    /// A table's rows of numeric features, `[batch, width]`.
    Features,
}

/// The model and its sizes. Fields that a kind does not use are ignored.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    pub kind: ModelKind,
    /// MLP: widths of the hidden layers; CNN: width of the hidden dense layer (first entry).
    pub hidden: Vec<usize>,
    pub activation: Activation,
    /// CNN: output channels of its two 3x3 convolutions.
    pub channels: Vec<usize>,
    /// GRU/LSTM: hidden size (and embedding size); transformer and llama: model width.
    pub width: usize,
    /// Transformer and llama: blocks.
    pub layers: usize,
    /// Transformer and llama: attention heads (must divide `width`).
    pub heads: usize,
    /// Llama: key/value heads, shared by groups of query heads (grouped-query attention; must
    /// divide `heads`). 0: one per attention head.
    pub kv_heads: usize,
    /// Transformer and llama: width of the feed-forward block.
    pub ff: usize,
    /// Transformer: a GPT-2-style decoder (causal attention, pre-norm blocks, a final
    /// LayerNorm, output tied to the token embedding, next-token loss on every position)
    /// instead of an encoder that answers at the query positions. A llama is always a decoder.
    pub decoder: bool,
    /// Transformer and llama: rows of the token table (a decoder's outputs too), when the model
    /// states more than its data uses (a Hugging Face config's `vocab_size`). 0: the data's
    /// tokens.
    pub vocab: usize,
    /// Transformer: rows of the learned position table (GPT-2's `n_positions`); llama: the
    /// longest sequence its rotary table covers. 0: the data's sequence length.
    pub positions: usize,
    /// Llama: the output layer is the token embedding itself (`tie_word_embeddings`).
    pub tied: bool,
    /// Llama: biases on the query, key and value projections (Qwen2).
    pub qkv_bias: bool,
    /// Llama: the rotary embedding's base (`rope_theta`).
    pub rope_theta: f64,
    /// Llama: RMSNorm's epsilon (`rms_norm_eps`).
    pub norm_eps: f64,
    /// Llama: each attention head's width (`head_dim`), when it is not `width / heads`. 0:
    /// `width / heads`. Written out only when set.
    #[serde(skip_serializing_if = "is_zero")]
    pub head_dim: usize,
    /// Llama: keys a windowed layer's queries see, their own included (Gemma's
    /// `sliding_window`). 0: every layer attends to all keys before each query. Written out
    /// only when set, as the fields below.
    #[serde(skip_serializing_if = "is_zero")]
    pub window: usize,
    /// Llama with a window: every `global_every`-th layer attends to all keys (Gemma 2: 2,
    /// Gemma 3: 6). 0: every layer is windowed.
    #[serde(skip_serializing_if = "is_zero")]
    pub global_every: usize,
    /// Llama: the rotary base of windowed layers (Gemma 3's `rope_local_base_freq`). 0:
    /// `rope_theta`.
    #[serde(skip_serializing_if = "is_unset")]
    pub local_rope_theta: f64,
    /// Llama: attention scores soft-capped at this, `c tanh(s / c)` (Gemma 2's
    /// `attn_logit_softcapping`). 0: not capped.
    #[serde(skip_serializing_if = "is_unset")]
    pub attn_softcap: f64,
    /// Llama: output logits soft-capped at this (`final_logit_softcapping`). 0: not capped.
    #[serde(skip_serializing_if = "is_unset")]
    pub final_softcap: f64,
    /// Mixtral and Qwen3-MoE: experts in each block's feed-forward, each a SwiGLU `ff` wide
    /// (`num_local_experts`, `num_experts`). 0: a dense feed-forward.
    #[serde(skip_serializing_if = "is_zero")]
    pub experts: usize,
    /// Mixtral and Qwen3-MoE: the experts each token goes to (`num_experts_per_tok`).
    #[serde(skip_serializing_if = "is_zero")]
    pub experts_per_token: usize,
}

fn is_zero(value: &usize) -> bool {
    *value == 0
}

fn is_unset(value: &f64) -> bool {
    *value == 0.0
}

impl ModelConfig {
    /// Whether the model predicts the next token at every position (a decoder's loss).
    pub fn is_decoder(&self) -> bool {
        self.kind.family().is_decoder(self)
    }

    /// Each attention head's width as the model builds it.
    pub fn head_dim(&self) -> usize {
        match self.head_dim {
            0 => self.width / self.heads.max(1),
            n => n,
        }
    }

    /// Key/value heads as the model builds them.
    pub fn kv_heads(&self) -> usize {
        match self.kv_heads {
            0 => self.heads,
            n => n,
        }
    }
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            kind: ModelKind::Mlp,
            hidden: vec![256, 256],
            activation: Activation::Relu,
            channels: vec![16, 32],
            width: 64,
            layers: 2,
            heads: 4,
            kv_heads: 0,
            ff: 128,
            decoder: false,
            vocab: 0,
            positions: 0,
            tied: false,
            qkv_bias: false,
            rope_theta: 10_000.0,
            norm_eps: 1e-5,
            head_dim: 0,
            window: 0,
            global_every: 0,
            local_rope_theta: 0.0,
            attn_softcap: 0.0,
            final_softcap: 0.0,
            experts: 0,
            experts_per_token: 0,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    Relu,
    Tanh,
    Sigmoid,
    Gelu,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OptimizerKind {
    /// Plain SGD: no state.
    Sgd,
    /// SGD with momentum 0.9: one velocity per parameter.
    Momentum,
    /// Adam: two moments per parameter.
    Adam,
    /// AdamW: Adam's two moments, weight decay applied to the weights directly.
    Adamw,
    /// AdamW with both moments stored as 8-bit codes in blocks of 256 values with an f32 scale
    /// each, as bitsandbytes' `AdamW8bit` (f32 moments for tensors under 4,096 values).
    Adamw8bit,
    /// Adafactor: a second moment factored into a row and a column per matrix, no first moment.
    Adafactor,
    /// Lion: one moment per parameter, updates by its sign.
    Lion,
}

impl OptimizerKind {
    /// Momentum's coefficient, as PyTorch's users set it (burn's path and the fused kernels).
    pub const MOMENTUM: f64 = 0.9;
    /// Adam's betas (burn's and PyTorch's defaults) and epsilon.
    pub const ADAM_BETAS: (f32, f32) = (0.9, 0.999);
    pub const ADAM_EPSILON: f32 = 1e-8;
    /// AdamW's decoupled weight decay: PyTorch's default (burn's is 1e-4).
    pub const ADAMW_WEIGHT_DECAY: f32 = 0.01;
    pub const ALL: [OptimizerKind; 7] = [
        Self::Sgd,
        Self::Momentum,
        Self::Adam,
        Self::Adamw,
        Self::Adamw8bit,
        Self::Adafactor,
        Self::Lion,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Sgd => "sgd",
            Self::Momentum => "momentum",
            Self::Adam => "adam",
            Self::Adamw => "adamw",
            Self::Adamw8bit => "adamw8bit",
            Self::Adafactor => "adafactor",
            Self::Lion => "lion",
        }
    }

    /// State values the optimizer keeps for a parameter of these dimensions (an estimate's
    /// input: burn's optimizers keep exactly these tensors; `adamw8bit`'s are bytes apiece
    /// where quantized, see `engine::train::adamw8bit::state_bytes`).
    pub fn state_values(self, dims: &[usize]) -> u64 {
        let values: u64 = dims.iter().map(|&d| d as u64).product();
        match self {
            Self::Sgd => 0,
            Self::Momentum | Self::Lion => values,
            Self::Adam | Self::Adamw | Self::Adamw8bit => 2 * values,
            // A row and a column second moment per matrix (per leading index for higher
            // ranks); a vector keeps a full one.
            Self::Adafactor => match dims {
                [.., rows, cols] => values / (*rows as u64 * *cols as u64) * (*rows + *cols) as u64,
                _ => values,
            },
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MemorySampling {
    /// Sync and read the allocator after every phase of every step, and read its high-water
    /// mark at every kernel launch: the exact picture, per phase.
    Phase,
    /// Sync and read once, at the end of each step (and after evaluation): cheap, and the
    /// high-water mark is the largest reading (unless a budget is set, which is always held to
    /// the mark read at every launch).
    Step,
}

/// The memory-saving strategies, each a field named as the CLI's `--set`, the page and the URL
/// know it. Each is implemented in `engine::strategies::<field name>`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Strategies {
    /// Split each batch into this many micro-batches and step once per batch (1: off).
    pub grad_accumulation: usize,
    /// Evaluate without autodiff (`no_grad`) or through the autodiff graph.
    pub eval_mode: EvalMode,
    /// Recompute some activations in backward instead of keeping them.
    pub checkpointing: Checkpointing,
    /// Forward and backward in f16 with f32 master weights and a loss scaler, or everything in
    /// f16 without a scaler.
    pub mixed_precision: MixedPrecision,
    /// What a loop keeps of each step to report on later: the loss value, the loss tensors
    /// summed undetached, or every step's outputs.
    pub loss_bookkeeping: LossBookkeeping,
    /// Let an activation take its input's buffer when nothing else needs it (`true`), or force
    /// it to write a copy while the input stays alive (`false`).
    pub inplace_activation: bool,
    /// Hand the allocator's cached, unused pages back after every step, after every epoch, or
    /// never (the `torch.cuda.empty_cache()` lesson).
    pub free_cache: FreeCache,
    /// Copy each batch from host memory (`host`), or keep the whole training split on the
    /// device and gather batches there (`device`).
    pub data_residency: DataResidency,
    /// How the allocator carves device memory: sub-slices of shared pages, or one page per
    /// allocation (the `max_split_size_mb` lesson). Fixed when the device starts: one per
    /// process (or page load).
    pub memory_pool: MemoryPool,
    /// How the weights are stored: f32, f16 for everything (`model.half()`: gradients and
    /// optimizer state follow), an int8-quantized copy for evaluation (training stays f32), or
    /// a frozen body block-quantized to 4 or 8 bits with everything else in f16 (`q4`, `q8`:
    /// QLoRA's base, for `trainable` = `lora` or `head`).
    pub weight_dtype: WeightDtype,
    /// Run the step through burn's ops and autodiff (`burn`), or, for a ReLU MLP, through
    /// vramlab's own fused WGSL kernels (`fused`: 3L + 1 dispatches a step, no graph).
    pub kernels: Kernels,
    /// A transformer's attention: scores, softmax and weighted sum as separate tensors that
    /// autodiff keeps (`naive`, burn's `MultiHeadAttention`), or one op that keeps the output
    /// and a log-sum-exp per row and recomputes the scores in backward (`fused`).
    pub attention: OpPath,
    /// The loss: burn's `log_softmax` then `gather` (`naive`), or one op that keeps the logits
    /// and a log-sum-exp per row (`fused`).
    pub cross_entropy: OpPath,
    /// A mixture of experts' products: every expert's matrices stacked and each product one
    /// grouped matmul over every expert's rows (`grouped`: transformers' `grouped_mm`), or one
    /// matrix an expert and a product an expert (`loop`: transformers' `eager`). A 4- or 8-bit
    /// base runs the loop, its matrices quantized one by one.
    pub experts: ExpertsPath,
    /// Which weights train: all of them, only the output layer (`head`: the rest frozen, no
    /// gradients and no optimizer state), or low-rank adapters beside frozen weights (`lora`).
    pub trainable: Trainable,
    /// LoRA: the adapters' rank.
    pub lora_rank: usize,
    /// LoRA: the adapters' scale is `lora_alpha / lora_rank`.
    pub lora_alpha: f64,
    /// LoRA: the factors' type. `f32` whatever the base (PEFT's default,
    /// `autocast_adapter_dtype=True`: factors, their gradients and optimizer state 4 bytes a
    /// value, cast to the activations' type where they meet them), or `base`: the base's own
    /// float type (16-bit factors over an f16 base). A quantized base's factors are always f32.
    pub adapter_dtype: AdapterDtype,
    /// What each of `gpus` GPUs keeps a shard of: nothing (each holds the whole run), or
    /// parameters, gradients and optimizer state (`full`: FSDP's FULL_SHARD, ZeRO-3).
    pub sharding: Sharding,
    /// What is kept in host memory instead of on each GPU: nothing, the optimizer's state and
    /// step (`optimizer`: ZeRO-Offload, under full or gradients sharding), the shards with
    /// their gradients and optimizer state (`parameters`: FSDP2's `CPUOffloadPolicy`, under
    /// full sharding), or each checkpointed block's input (`activations`: torchtune's
    /// `enable_activation_offloading`).
    pub offload: Offload,
}

/// The type of LoRA's factors (see [`Strategies::adapter_dtype`]).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum AdapterDtype {
    #[default]
    F32,
    /// The base's float type.
    Base,
}

impl AdapterDtype {
    pub const NAMES: &'static [&'static str] = &["f32", "base"];

    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::Base => "base",
        }
    }
}

/// What a run keeps in host memory instead of device memory (see [`Strategies::offload`]).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Offload {
    #[default]
    None,
    /// Optimizer state on the host, stepped there (ZeRO-Offload), under full or gradients
    /// sharding.
    Optimizer,
    /// Parameters, gradients and optimizer state on the host (FSDP2's `CPUOffloadPolicy`),
    /// under full sharding: each block gathered to the GPU before it runs.
    Parameters,
    /// Each checkpointed block's input on the host between forward and its recomputation.
    Activations,
}

impl Offload {
    pub const ALL: [Self; 4] = [
        Self::None,
        Self::Optimizer,
        Self::Parameters,
        Self::Activations,
    ];

    /// The offload a name (as `name` gives it) stands for.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|offload| offload.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Optimizer => "optimizer",
            Self::Parameters => "parameters",
            Self::Activations => "activations",
        }
    }
}

/// What a run spread over several GPUs shards across them (see [`Strategies::sharding`]).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Sharding {
    /// Every GPU holds the whole model, its gradients and optimizer state.
    #[default]
    None,
    /// Optimizer state sharded (ZeRO-1).
    Optimizer,
    /// Optimizer state and gradients sharded (ZeRO-2, FSDP's SHARD_GRAD_OP).
    Gradients,
    /// Parameters, gradients and optimizer state sharded; each block's parameters gathered
    /// before it runs and freed after (FSDP's FULL_SHARD, FSDP2's default, ZeRO-3).
    Full,
}

impl Sharding {
    pub const NAMES: &'static [&'static str] = &["none", "optimizer", "gradients", "full"];

    /// Whether parameters are sharded at rest and gathered around their use (FSDP: `full`, and
    /// `gradients` as FSDP's SHARD_GRAD_OP, which keeps a block gathered from its forward to
    /// its backward).
    pub fn shards_parameters(self) -> bool {
        matches!(self, Self::Full | Self::Gradients)
    }

    /// FSDP's name for it, where it has one.
    pub fn fsdp_name(self) -> &'static str {
        match self {
            Self::Full => "FULL_SHARD",
            Self::Gradients => "SHARD_GRAD_OP",
            Self::Optimizer => "ZeRO-1",
            Self::None => "NO_SHARD",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Optimizer => "optimizer",
            Self::Gradients => "gradients",
            Self::Full => "full",
        }
    }
}

/// Which weights train (see [`Strategies::trainable`]).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Trainable {
    #[default]
    All,
    /// The output layer (and a decoder's final norm); everything before it frozen.
    Head,
    /// Rank-`lora_rank` adapters on every weight matrix of the body; every base weight frozen.
    Lora,
}

impl Trainable {
    pub fn name(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Head => "head",
            Self::Lora => "lora",
        }
    }
}

/// Whether an op runs as burn's separate ops (`naive`) or as one of vramlab's fused ops
/// (`engine::ops`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum OpPath {
    #[default]
    Naive,
    Fused,
}

impl OpPath {
    pub fn name(self) -> &'static str {
        match self {
            Self::Naive => "naive",
            Self::Fused => "fused",
        }
    }
}

/// How a mixture of experts runs its experts' products (see [`Strategies::experts`]).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ExpertsPath {
    #[default]
    Grouped,
    Loop,
}

impl ExpertsPath {
    pub fn name(self) -> &'static str {
        match self {
            Self::Grouped => "grouped",
            Self::Loop => "loop",
        }
    }
}

impl Strategies {
    /// Whether a mixture of experts stacks its experts and groups their products: asked for,
    /// and over a float base (a quantized base runs the loop).
    pub fn grouped_experts(&self) -> bool {
        self.experts == ExpertsPath::Grouped && !self.weight_dtype.is_quantized_base()
    }

    /// The precision the run trains in: `weight_dtype` = `f16` is `model.half()`, which is what
    /// `mixed_precision` = `f16_unscaled` does.
    /// Whether LoRA's factors are f32 whatever the base's type: by default, and always beside
    /// a quantized base (an f16 factor there trained to NaN on its first step).
    pub fn adapters_in_f32(&self) -> bool {
        self.adapter_dtype == AdapterDtype::F32 || self.weight_dtype.is_quantized_base()
    }

    /// Bytes of a stored weight value: 2 where the weights are 16-bit (`weight_dtype` f16, a
    /// quantized base's unquantized rest, pure f16), else 4 (f32, and f32 master weights under
    /// mixed precision).
    pub fn weight_value_bytes(&self) -> u64 {
        match self.training_precision() {
            MixedPrecision::F16Unscaled => 2,
            _ => 4,
        }
    }

    /// Bytes of a value that trains (its gradient and optimizer state follow): LoRA's factors'
    /// type (`adapters_in_f32`), else the weights'.
    pub fn trained_value_bytes(&self) -> u64 {
        if self.trainable == Trainable::Lora && self.adapters_in_f32() {
            4
        } else {
            self.weight_value_bytes()
        }
    }

    pub fn training_precision(&self) -> MixedPrecision {
        match self.weight_dtype {
            // A quantized base keeps everything it does not quantize in f16, as QLoRA does.
            WeightDtype::F16 | WeightDtype::Q4 | WeightDtype::Q8 => MixedPrecision::F16Unscaled,
            _ => self.mixed_precision,
        }
    }
}

/// Whose kernels run a training step (see [`Strategies::kernels`]).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Kernels {
    #[default]
    Burn,
    Fused,
}

impl Kernels {
    pub fn name(self) -> &'static str {
        match self {
            Self::Burn => "burn",
            Self::Fused => "fused",
        }
    }
}

/// How parameters are stored (see [`Strategies::weight_dtype`]).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum WeightDtype {
    #[default]
    F32,
    F16,
    /// Symmetric per-tensor int8 (burn's quantization) for evaluation.
    Int8,
    /// The frozen body's weight matrices in 4-bit blocks (QLoRA's base); the rest in f16.
    Q4,
    /// The frozen body's weight matrices in 8-bit blocks; the rest in f16.
    Q8,
}

impl WeightDtype {
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Int8 => "int8",
            Self::Q4 => "q4",
            Self::Q8 => "q8",
        }
    }

    /// A frozen base stored block-quantized (`q4`, `q8`).
    pub fn is_quantized_base(self) -> bool {
        matches!(self, Self::Q4 | Self::Q8)
    }
}

impl Default for Strategies {
    fn default() -> Self {
        Self {
            grad_accumulation: 1,
            eval_mode: EvalMode::NoGrad,
            checkpointing: Checkpointing::None,
            mixed_precision: MixedPrecision::Off,
            loss_bookkeeping: LossBookkeeping::Scalar,
            inplace_activation: true,
            free_cache: FreeCache::Never,
            data_residency: DataResidency::Host,
            memory_pool: MemoryPool::Subslices,
            weight_dtype: WeightDtype::F32,
            kernels: Kernels::Burn,
            attention: OpPath::Naive,
            cross_entropy: OpPath::Naive,
            experts: ExpertsPath::Grouped,
            trainable: Trainable::All,
            lora_rank: 8,
            lora_alpha: 16.0,
            adapter_dtype: AdapterDtype::F32,
            sharding: Sharding::None,
            offload: Offload::None,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EvalMode {
    /// The model's `valid()` copy on the device without autodiff: no graph is recorded.
    NoGrad,
    /// The training model itself: every eval forward records a graph, as in PyTorch without
    /// `torch.no_grad()`.
    Autodiff,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Checkpointing {
    None,
    /// burn's balanced strategy, an op-level policy: memory-bound ops (element-wise maths,
    /// activations) are recomputed in backward and every matmul's output is kept.
    Balanced,
    /// Per-layer recompute, as PyTorch's `torch.utils.checkpoint` around each block and Hugging
    /// Face's gradient checkpointing: forward keeps each block's input, backward recomputes one
    /// block at a time (`ops::recompute`). Transformer and llama families.
    Layers,
}

impl Checkpointing {
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Balanced => "balanced",
            Self::Layers => "layers",
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MixedPrecision {
    Off,
    /// f16 compute from f32 master weights, with a dynamic loss scaler.
    F16,
    /// Parameters, gradients, optimizer state and compute all in f16, no loss scaling (the
    /// `model.half()` recipe).
    F16Unscaled,
}

impl MixedPrecision {
    pub fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::F16 => "f16",
            Self::F16Unscaled => "f16_unscaled",
        }
    }
}

/// cubecl's memory configurations (0.11 has these two; page sizes are its own choice).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum MemoryPool {
    /// cubecl's adaptive pools: small allocations share sub-sliced pages.
    #[default]
    Subslices,
    /// One page per allocation, in size buckets.
    Exclusive,
}

impl MemoryPool {
    pub fn name(self) -> &'static str {
        match self {
            Self::Subslices => "subslices",
            Self::Exclusive => "exclusive",
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DataResidency {
    Host,
    Device,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FreeCache {
    Never,
    /// At the end of every step.
    Step,
    /// At the end of the last step of each pass over the training split.
    Epoch,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LossBookkeeping {
    /// Keep only each step's value (`total += loss.item()`).
    Scalar,
    /// Sum the loss tensors themselves, undetached, across steps (`total_loss += loss`).
    Tensor,
    /// Append each step's outputs (the logits), undetached, to a list (`outputs.append(out)`).
    Outputs,
}

impl RunConfig {
    /// Parse a JSON document, naming the field when a value has the wrong type or name.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let mut de = serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(&mut de).map_err(ConfigError::from_serde_path)
    }

    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a RunConfig always serializes")
    }

    /// Test samples an evaluation reads of a split of `test_len`: the first `eval_batches`
    /// batches, or the whole split.
    pub fn evaluated_samples(&self, test_len: usize) -> usize {
        match self.eval_batches {
            0 => test_len,
            batches => test_len.min(batches.saturating_mul(self.eval_batch_size)),
        }
    }

    /// Rows of a token model's embedding table: the model's stated vocabulary, or the data's
    /// tokens (a query task's query token included).
    pub fn token_rows(&self) -> usize {
        match self.model.vocab {
            0 => self.data.token_ids(),
            rows => rows,
        }
    }

    /// Whether a plan cuts the model into one GPU's shards: under full or gradients sharding
    /// above one GPU, or on one whose shards live on the host (`offload = parameters`, FSDP2's
    /// `CPUOffloadPolicy`, which gathers each block to the GPU however many GPUs share it).
    pub fn cuts_into_shards(&self) -> bool {
        self.strategies.sharding.shards_parameters()
            && (self.gpus > 1 || self.strategies.offload == Offload::Parameters)
    }

    /// Positions a transformer's table (or a llama's rotary table) covers: the model's stated
    /// count, or the data's tokens per sample (a query task's input and query halves).
    pub fn position_rows(&self) -> usize {
        match self.model.positions {
            0 => self.data.sample_tokens(),
            rows => rows,
        }
    }

    /// Samples in the largest forward pass of a training step: the batch, or with gradient
    /// accumulation its largest micro-batch.
    pub fn largest_micro_batch(&self) -> usize {
        self.batch_size
            .div_ceil(self.strategies.grad_accumulation.max(1))
    }
}
