//! The catalog of settings a person toggles to save memory: each strategy (and the plain fields
//! the folklore is about), what it does in one line, and each folklore claim about it with the
//! runs that test it. The page's panels, the `claims` report and the README's strategy list are
//! all read from, or checked against, this one table.

/// The figure a claim is about. Each is taken per step (or per evaluation) over a run, so a side
/// has a median and a spread; see `engine::claims`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Each step's high-water mark of bytes in use.
    PeakInUse,
    /// Each step's activations at their own size: in use at the end of forward less in use
    /// after the batch's upload (the largest over a step's passes; see `memory::categories`).
    Activations,
    /// Each step's high-water mark of bytes reserved.
    PeakReserved,
    /// Each evaluation's high-water mark of bytes in use.
    EvalPeak,
    /// The weights as stored, measured when the run starts.
    WeightBytes,
    /// The int8 evaluation copy (on) against the f32 weights (off).
    EvalWeightBytes,
    /// Each step's time (synced natively), from three runs a side.
    MsPerStep,
    /// Each evaluation's accuracy on the test split (with `weight_dtype` = `int8`, of the int8
    /// copy).
    EvalAccuracy,
    /// The training loss over the last ten steps (the claim is about training quality).
    FinalLoss,
    /// What each step adds to the bytes in use at its end, over steps a loss readback group
    /// apart: memory kept across steps.
    GrowthPerStep,
    /// Bytes in use at each step's end above the weights: the optimizer's state.
    OptimizerState,
    /// Each step's gradients and optimizer state at their own sizes (gradients when backward
    /// ends, state at the step's end): what training a weight costs beyond storing it.
    TrainingState,
    /// The run with the budget must stop with out-of-memory and the next one run.
    StopsUnderBudget,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Self::PeakInUse => "peak in use",
            Self::Activations => "activations",
            Self::PeakReserved => "peak reserved",
            Self::EvalPeak => "eval peak in use",
            Self::WeightBytes => "weight bytes",
            Self::EvalWeightBytes => "eval weight bytes",
            Self::MsPerStep => "ms/step",
            Self::EvalAccuracy => "eval accuracy",
            Self::FinalLoss => "final loss",
            Self::GrowthPerStep => "growth per step",
            Self::OptimizerState => "optimizer state",
            Self::TrainingState => "gradients + optimizer state",
            Self::StopsUnderBudget => "out-of-memory stop",
        }
    }

    /// Whether the figure is bytes (as opposed to time, loss or accuracy).
    pub fn is_bytes(self) -> bool {
        !matches!(self, Self::MsPerStep | Self::FinalLoss | Self::EvalAccuracy)
    }

    /// Runs a side takes: timing varies from run to run, the allocator's figures do not.
    pub fn runs_per_side(self) -> usize {
        match self {
            Self::MsPerStep => 3,
            _ => 1,
        }
    }
}

/// The run a claim starts from: a preset with `path=value` changes that size it for a lesson,
/// small enough that every claim runs in a browser on a software GPU in minutes, large enough
/// that activations outweigh the fixed costs the tips do not touch.
#[derive(Debug)]
pub struct Base {
    pub preset: &'static str,
    pub sets: &'static [&'static str],
}

impl Base {
    /// The preset and its changes, as a command line's words: `spiral-mlp model.hidden=[128,128]`.
    pub fn label(&self) -> String {
        std::iter::once(self.preset)
            .chain(self.sets.iter().copied())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The spiral MLP at half the preset's width: a step costs SwiftShader a quarter of the
/// preset's multiply-adds, and activations are still most of the peak.
const SPIRAL: Base = Base {
    preset: "spiral-mlp",
    sets: &["model.hidden=[128,128]"],
};

/// The digits MLP as its preset builds it (64-512-512-10): every weight matrix has at least
/// 4,096 values, the size from which 8-bit optimizers quantize a tensor's state. Batches of 32:
/// an optimizer's state does not depend on the batch, and at the preset's 256 the card took
/// 42 s of the page's "Run all" on a software GPU.
const DIGITS: Base = Base {
    preset: "digits-mlp",
    sets: &["batch_size=32"],
};

/// The sorting task's recurrent models on sequences of 4 tokens (8 time steps), width 64, in
/// batches of 32: each time step is a run of small kernels, which a software GPU pays per launch.
const SORT: &[&str] = &[
    "data.seq_len=4",
    "model.width=64",
    "batch_size=32",
    "eval_batch_size=64",
];

const SORT_LSTM: Base = Base {
    preset: "sort-lstm",
    sets: SORT,
};

const SORT_GRU: Base = Base {
    preset: "sort-gru",
    sets: SORT,
};

/// The sort task's transformer on 64-token sequences (128 positions), batches of 4: each
/// layer's attention scores, `[4, 4, 128, 128]` three times over, outweigh its per-token
/// activations, and a step stays small enough for a software GPU.
const LONG_SORT: Base = Base {
    preset: "sort-transformer",
    sets: &["data.seq_len=64", "batch_size=4", "eval_batch_size=8"],
};

/// [`LONG_SORT`] with vramlab's fused attention.
const LONG_SORT_FUSED: Base = Base {
    preset: "sort-transformer",
    sets: &[
        "data.seq_len=64",
        "batch_size=4",
        "eval_batch_size=8",
        "strategies.attention=fused",
    ],
};

/// The tiny GPT-2-style decoder over a 4,096-token vocabulary, batches of 32: its logits, over
/// every position, `[32 x 16, 4,097]`, and the loss's tensors of that size are the largest of
/// the step, as in a language model.
const WIDE_VOCAB: Base = Base {
    preset: "sort-gpt",
    sets: &["data.vocab=4096", "batch_size=32", "eval_batch_size=64"],
};

/// LoRA of rank 2 on the sorting task's llama at width 256 (feed-forward 704, eleven words of
/// 64): its body's weight matrices, 1.47 million values, outweigh its embedding and norms as a
/// language model's do, and a step stays small.
const LORA_LLAMA: Base = Base {
    preset: "sort-llama",
    sets: &[
        "model.width=256",
        "model.ff=704",
        "strategies.trainable=lora",
        "strategies.lora_rank=2",
        "batch_size=32",
        "eval_batch_size=64",
    ],
};

/// Steps of a transformer lesson's runs: each is a few seconds on a software GPU.
const TRANSFORMER_STEPS: usize = 6;

/// A llama deep enough that one block's activations are a small share of all of them.
const DEEP_LLAMA: Base = Base {
    preset: "sort-llama",
    sets: &[
        "model.layers=6",
        "data.seq_len=32",
        "batch_size=32",
        "eval_batch_size=64",
    ],
};

/// What a further part of a claim must show, on its own figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bar {
    /// The tip costs: on / off grows beyond the spread, and by no more than this.
    CostsAtMost(f64),
    /// The tip keeps the figure (higher is better): on falls below off by no more than this,
    /// in the figure's own unit (accuracy: a fraction).
    KeepsWithin(f64),
}

/// A part of a claim beyond its main figure ("..., same accuracy", "trades time for ..."),
/// judged on the figure it names.
#[derive(Debug)]
pub struct Part {
    pub metric: Metric,
    pub bar: Bar,
}

/// One folklore claim and the two runs that test it.
#[derive(Debug)]
pub struct Claim {
    /// The folklore, in a few words.
    pub folklore: &'static str,
    /// The run both sides start from.
    pub base: &'static Base,
    /// `path=value` overrides of the run without the tip, then with it.
    pub off: &'static [&'static str],
    pub on: &'static [&'static str],
    pub metric: Metric,
    /// on / off at or below this: the claim holds. A timing claim's bar above 1 is about a
    /// cost: the step time must grow, and by no more than this.
    pub holds_at: f64,
    /// The claim's other parts, each judged on its own figure: the claim holds only where
    /// every part does.
    pub also: &'static [Part],
    /// The tip promises the same training: a clearly worse loss makes it hold only partly.
    pub same_training: bool,
    /// Steps a run takes.
    pub steps: usize,
    /// Why it comes out the way it does, in two sentences.
    pub mechanism: &'static str,
    /// What the verdict depends on where two adapters can differ in it, in words; `None` when
    /// it should be the same wherever the claim runs. Shown on the claim's card, and the only
    /// claims whose page and native verdicts may differ (`engine::claims::compare`).
    pub depends_on: Option<&'static str>,
}

/// A setting: its config field, how the page labels it, its values and what it does.
#[derive(Debug)]
pub struct Entry {
    /// The config field, as files, overrides and the URL name it.
    pub field: &'static str,
    pub label: &'static str,
    /// The values it takes; empty for a number or size.
    pub choices: &'static [&'static str],
    /// Choices that need an adapter with shader-f16.
    pub f16_choices: &'static [&'static str],
    /// What it does, in one line.
    pub explain: &'static str,
    pub claims: &'static [Claim],
}

impl Entry {
    /// A strategy (a field of `strategies`), as opposed to a plain field the folklore is about.
    pub fn is_strategy(&self) -> bool {
        self.field.starts_with("strategies.")
    }
}

/// Every entry with a field, in the order the `claims` report runs them.
pub fn find(field: &str) -> Option<&'static Entry> {
    CATALOG.iter().find(|entry| entry.field == field)
}

/// Every claim, with its entry.
pub fn claims() -> impl Iterator<Item = (&'static Entry, &'static Claim)> {
    CATALOG
        .iter()
        .flat_map(|entry| entry.claims.iter().map(move |claim| (entry, claim)))
}

use Metric::*;

use crate::engine::config::ModelKind;

/// Steps of a claim's runs unless it says otherwise: enough for the steps after the first
/// (which creates the optimizer's state) to give a median and a spread.
const STEPS: usize = 12;

/// The bar of a claim that halves activations: half, with a tenth of the half to spare
/// (0.55x). Activations at their own size leave out the weights, gradients and optimizer state,
/// so what is left over the half is what a forward pass keeps whatever the batch or precision:
/// the loss, and with f16 compute the f16 copy of the weights kept for backward (on the spiral
/// MLP at width 128, batch 512: 34 KiB over 515 KiB of halved activations, 0.54x measured).
const HALF: f64 = 0.55;

/// A step may take this much longer than without the tip for checkpointing's time to be the
/// cost it claims, about one more forward pass: a forward is about a third of a step's work
/// (4/3), with room for timing's spread.
const ONE_MORE_FORWARD: f64 = 1.6;

const fn claim(
    folklore: &'static str,
    base: &'static Base,
    off: &'static [&'static str],
    on: &'static [&'static str],
    metric: Metric,
    holds_at: f64,
    same_training: bool,
) -> Claim {
    Claim {
        folklore,
        base,
        off,
        on,
        metric,
        holds_at,
        also: &[],
        same_training,
        steps: STEPS,
        mechanism: "",
        depends_on: None,
    }
}

impl Claim {
    const fn because(self, mechanism: &'static str) -> Self {
        Self { mechanism, ..self }
    }

    const fn steps(self, steps: usize) -> Self {
        Self { steps, ..self }
    }

    const fn also(self, also: &'static [Part]) -> Self {
        Self { also, ..self }
    }

    const fn depends_on(self, what: &'static str) -> Self {
        Self {
            depends_on: Some(what),
            ..self
        }
    }

    /// Every figure the claim is judged on: its metric, then its parts'.
    pub fn metrics(&self) -> impl Iterator<Item = Metric> + '_ {
        std::iter::once(self.metric).chain(self.also.iter().map(|part| part.metric))
    }

    /// The figures it is judged on, in words: "activations and ms/step".
    pub fn judged_on(&self) -> String {
        let names: Vec<&str> = self.metrics().map(Metric::name).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.join(""),
        }
    }
}

const fn entry(
    field: &'static str,
    label: &'static str,
    choices: &'static [&'static str],
    explain: &'static str,
    claims: &'static [Claim],
) -> Entry {
    Entry {
        field,
        label,
        choices,
        f16_choices: &[],
        explain,
        claims,
    }
}

#[rustfmt::skip]
pub const CATALOG: &[Entry] = &[
    entry("batch_size", "batch size", &[], "samples per optimizer step", &[
        claim("halve the batch, halve the activation memory", &SPIRAL,
            &[], &["batch_size=256"], Activations, HALF, false)
            .because("Activations are kept per sample for backward, so they scale with the batch: \
             judged on them alone, against half with a tenth of it to spare (0.55x) for what a \
             forward pass keeps whatever the batch, such as the loss. Parameters, gradients and \
             optimizer state do not scale, so the whole peak falls by less than half."),
    ]),
    entry("eval_batch_size", "eval batch size", &[], "samples per evaluation batch", &[
        claim("keep the eval batch small", &SPIRAL,
            &["eval_batch_size=1024", "eval_every=3"], &["eval_batch_size=128", "eval_every=3"],
            EvalPeak, 0.7, true)
            .because("Evaluation holds one batch's inputs and layer outputs at a time, so its \
             peak scales with the eval batch. Without a graph each layer's input is freed once \
             its output exists."),
    ]),
    entry("strategies.grad_accumulation", "gradient accumulation (k)", &[],
        "k micro-batches per optimizer step, each loss scaled by its share", &[
        claim("accumulate gradients: same step, ~1/k activations", &SPIRAL,
            &[], &["strategies.grad_accumulation=4"], PeakInUse, 0.6, true)
            .because("Each of the k passes holds only its micro-batch's activations, and their \
             gradients add up to the whole batch's. The summed gradients stay alive across the \
             passes, so the peak falls by less than k."),
    ]),
    Entry {
        f16_choices: &["f16", "f16_unscaled"],
        ..entry("strategies.mixed_precision", "mixed precision", &["off", "f16", "f16_unscaled"],
        "f16: f16 compute from f32 master weights with a loss scaler; f16_unscaled: \
         model.half()", &[
        claim("fp16 with a loss scaler halves activation memory", &SPIRAL,
            &[], &["strategies.mixed_precision=f16"], Activations, HALF, true)
            .because("Activations computed in f16 take half the bytes: judged on them alone, \
             against half with a tenth of it to spare (0.55x) for the f16 copy of the weights \
             each pass keeps for backward. The f32 master weights, their gradients and the \
             optimizer state stay f32."),
        claim("fp16 without a scaler trains as well", &SPIRAL,
            &[], &["strategies.mixed_precision=f16_unscaled"], FinalLoss, 1.1, false)
            .because("Without loss scaling small gradients flush to zero in f16. Adam's epsilon \
             (1e-8) is 0 in f16, so its update can divide by zero and the weights become NaN.")
            .steps(30),
    ])},
    entry("strategies.eval_mode", "evaluation mode", &["no_grad", "autodiff"],
        "no_grad evaluates without recording a graph; autodiff records one per batch", &[
        claim("evaluate under no_grad or memory balloons", &SPIRAL,
            &["strategies.eval_mode=autodiff", "eval_every=3"],
            &["strategies.eval_mode=no_grad", "eval_every=3"], EvalPeak, 0.8, true)
            .because("Evaluating through autodiff records a graph per batch that keeps every \
             layer's inputs. Without one, each layer's input is freed as soon as its output \
             exists."),
    ]),
    entry("strategies.checkpointing", "gradient checkpointing", &["none", "balanced", "layers"],
        "balanced: burn's op-level policy, recompute cheap activations in backward; layers: keep \
         each block's input and recompute one block at a time (PyTorch's per-block checkpoint)", &[
        claim("checkpointing trades time for activation memory", &SPIRAL,
            &[], &["strategies.checkpointing=balanced"], Activations, 0.9, true)
            .also(&[Part { metric: MsPerStep, bar: Bar::CostsAtMost(ONE_MORE_FORWARD) }])
            .because("burn's balanced checkpointing keeps the outputs of matmuls and convolutions \
             and recomputes activations and element-wise ops in backward. Each dense layer then \
             keeps one tensor for backward instead of two, and backward pays for the \
             recomputing: a step should take longer, by at most one more forward pass (1.6x)."),
        claim("checkpoint every layer: activations for one layer at a time", &DEEP_LLAMA,
            &[], &["strategies.checkpointing=layers"], PeakInUse, 0.6, true)
            .steps(TRANSFORMER_STEPS)
            .because("Forward keeps only each block's input; backward runs one block's forward \
             again through autodiff, then its backward, and frees it before the next. The step \
             holds one block's activations instead of all six."),
        claim("checkpoint every layer: costs about one more forward pass of time", &DEEP_LLAMA,
            &[], &["strategies.checkpointing=layers"], MsPerStep, ONE_MORE_FORWARD, true)
            .steps(TRANSFORMER_STEPS)
            .because("Each block's forward runs twice, once without a graph and once in \
             backward. A forward is about a third of a step's work, so a step should take about \
             4/3 as long."),
    ]),
    entry("strategies.loss_bookkeeping", "loss bookkeeping", &["scalar", "tensor", "outputs"],
        "what the loop keeps each step: loss.item(), the loss tensor summed (total_loss += loss), \
         or the outputs appended to a list", &[
        // SGD on both sides: Adam's update kernels take new scalars every step (its bias
        // corrections), and cubecl-wgpu 0.11 caches each launch's info uniform by its bytes,
        // so in use grows about 1 KiB a step until that cache's 512 entries are full (near
        // step 97, `vramlab soak`): that would blur what the bookkeeping adds.
        claim("sum loss.item(), not the loss tensor", &SPIRAL,
            &["strategies.loss_bookkeeping=tensor", "optimizer=sgd", "learning_rate=0.1"],
            &["strategies.loss_bookkeeping=scalar", "optimizer=sgd", "learning_rate=0.1"],
            GrowthPerStep, 0.5, true)
            .because("In PyTorch `total_loss += loss` keeps every step's graph alive. burn frees \
             a graph's saved tensors in backward whether or not the loss is still referenced, \
             so the running sum keeps far less: what it does keep is measured here.")
            .steps(22),
        claim("keeping every step's outputs leaks memory", &SPIRAL,
            &["strategies.loss_bookkeeping=outputs", "optimizer=sgd", "learning_rate=0.1"],
            &["strategies.loss_bookkeeping=scalar", "optimizer=sgd", "learning_rate=0.1"],
            GrowthPerStep, 0.5, true)
            .because("A kept output holds its logits on the device after backward, though burn \
             has freed the rest of its graph. Memory grows by one logits tensor every step.")
            .steps(22),
    ]),
    entry("strategies.inplace_activation", "in-place activation", &["true", "false"],
        "false: the activation writes a copy while its input stays alive", &[
        claim("ReLU(inplace=True) saves memory", &SPIRAL,
            &["strategies.inplace_activation=false"], &["strategies.inplace_activation=true"],
            PeakInUse, 0.95, true)
            .because("burn's ReLU keeps its input for backward and the next layer keeps its \
             output, so in training neither buffer can be reused. burn reuses a buffer only when \
             no one else holds it, as in a pass without a graph."),
    ]),
    entry("strategies.free_cache", "free cached memory", &["never", "step", "epoch"],
        "hand the allocator's unused pages back after every step or epoch", &[
        claim("empty_cache() frees GPU memory", &SPIRAL,
            &[], &["strategies.free_cache=step"], PeakReserved, 0.8, true)
            .because("Releasing the cache hands unused pages back, which lowers reserved memory \
             between steps. Bytes in use are untouched, and the next step allocates its pages \
             again.")
            .depends_on("the allocator's page kind: WebGPU builds of cubecl have exclusive pages \
             only, sized to each allocation, so freeing the cache gives back most of what is \
             reserved; native builds carve tensors out of shared pages (cubecl's adaptive \
             pools), which the tensors living in them keep reserved"),
    ]),
    entry("strategies.data_residency", "data residency", &["host", "device"],
        "device: the training split lives on the GPU and batches are gathered there", &[
        claim("keep the data on the GPU: faster steps", &SPIRAL,
            &[], &["strategies.data_residency=device"], MsPerStep, 0.95, true)
            .because("A resident split saves each step's copy of the batch from host memory, at \
             the cost of the split's bytes. How much that saves depends on how the copy compares \
             with the step's compute."),
    ]),
    entry("strategies.memory_pool", "allocator pools", &["subslices", "exclusive"],
        "subslices: small allocations share pages; exclusive: a page each (fixed when the device \
         starts)", &[
        claim("tune the allocator's split size against fragmentation", &SPIRAL,
            &[], &["strategies.memory_pool=exclusive"], PeakReserved, 0.9, true)
            .because("Exclusive pages are sized to each allocation in buckets, so less of each \
             page sits unused. Sub-sliced pools carve small tensors out of large shared pages and \
             reserve in large steps."),
    ]),
    Entry {
        f16_choices: &["f16", "q4", "q8"],
        ..entry("strategies.weight_dtype", "weight precision", &["f32", "f16", "int8", "q4", "q8"],
        "f16: model.half(), gradients and optimizer state too; int8: quantized copy for \
         evaluation; q4, q8: a frozen body in 4- or 8-bit blocks, the rest f16 (QLoRA's base, \
         with trainable lora or head)", &[
        claim("model.half() halves the model", &SPIRAL,
            &[], &["strategies.weight_dtype=f16"], WeightBytes, 0.55, true)
            .because("f16 weights take two bytes each instead of four. Their gradients and the \
             optimizer state follow them into f16."),
        // Not `same_training`: the int8 copy is made for evaluation, so training is the same
        // on both sides by construction; the accuracy half is judged on the copy's evaluation.
        claim("int8 weights: a quarter of the bytes, same accuracy", &SPIRAL,
            &[], &["strategies.weight_dtype=int8"], EvalWeightBytes, 0.3, false)
            .also(&[Part { metric: EvalAccuracy, bar: Bar::KeepsWithin(0.01) }])
            .because("burn packs four int8 weights into each 32-bit word with one f32 scale per \
             tensor. Biases and matrices whose last dimension is not a multiple of 4 stay f32. \
             Rounding moves a weight by at most half of one of 255 levels, so the copy's \
             accuracy on the test split should stay within a point of the f32 weights'."),
        claim("QLoRA: a 4-bit base", &LORA_LLAMA,
            &["strategies.weight_dtype=f16"], &["strategies.weight_dtype=q4"], WeightBytes, 0.3,
            true)
            .because("The frozen body's matrices are stored as 4-bit integers, eight to a 32-bit \
             word, with one f16 scale per block of 64: 4.25 bits a weight instead of 16, \
             dequantized one layer at a time for each product. Embeddings and norms stay f16 and \
             the adapters f32, so the model shrinks a little less than its body."),
    ])},
    entry("strategies.kernels", "kernels", &["burn", "fused"],
        "fused: vramlab's own WGSL step for a ReLU MLP (3L+1 dispatches, no autodiff graph)", &[
        claim("fused kernels keep fewer intermediates", &SPIRAL,
            &[], &["strategies.kernels=fused"], PeakInUse, 0.8, true)
            .because("The fused step keeps each layer's output and its gradient and nothing else. \
             burn's autodiff also keeps each op's saved inputs and the unfused optimizer's \
             temporaries."),
    ]),
    entry("strategies.attention", "attention", &["naive", "fused"],
        "fused: one op that keeps each row's log-sum-exp and recomputes the scores in backward",
        &[
        claim("fused attention keeps no L x L scores", &LONG_SORT,
            &[], &["strategies.attention=fused"], PeakInUse, 0.8, true)
            .steps(TRANSFORMER_STEPS)
            .because("burn's attention keeps the scores and the softmax weights, batch x heads x \
             L x L each, for backward. The fused op keeps the output and one log-sum-exp per row \
             and its kernels form each score again in registers in backward: no L x L tensor \
             at all."),
    ]),
    entry("strategies.cross_entropy", "loss", &["naive", "fused"],
        "fused: one op that keeps the logits and each row's log-sum-exp, nothing vocabulary-sized \
         of its own", &[
        claim("a fused loss keeps no vocabulary-sized intermediates", &WIDE_VOCAB,
            &[], &["strategies.cross_entropy=fused"], PeakInUse, 0.9, true)
            .steps(TRANSFORMER_STEPS)
            .because("burn's loss is log_softmax then gather: autodiff keeps the log-softmax, as \
             large as the logits, and its backward makes further tensors of that size. The fused \
             op keeps the logits and one number per row and writes its gradient over them."),
    ]),
    entry("strategies.experts", "experts' products", &["grouped", "loop"],
        "grouped: every expert's matrices stacked, each product one grouped matmul over every \
         expert's rows (transformers' grouped_mm); loop: one matrix and one product an expert \
         (eager). A 4- or 8-bit base runs the loop", &[]),
    entry("strategies.trainable", "trainable weights", &["all", "head", "lora"],
        "head: only the output layer trains; lora: low-rank adapters beside frozen weights", &[
        claim("freeze the backbone: no gradients, no optimizer state", &SPIRAL,
            &[], &["strategies.trainable=head"], TrainingState, 0.5, false)
            .because("A frozen weight gets no gradient, so the optimizer keeps no moments for \
             it, and no graph is recorded where nothing before it trains. Only the output \
             layer's gradients and state remain."),
        claim("LoRA trains a fraction of the weights", &SPIRAL,
            &[], &["strategies.trainable=lora", "strategies.lora_rank=4"], TrainingState, 0.5,
            false)
            .because("Every weight matrix is frozen and two thin factors of rank r train beside \
             it, so gradients and optimizer state shrink to the factors' share. The frozen \
             weights stay stored, and the activations stay: backward still runs through every \
             layer."),
    ]),
    entry("strategies.sharding", "sharding across GPUs",
        &["none", "optimizer", "gradients", "full"],
        "with gpus above 1, what each GPU keeps a shard of: full shards parameters, gradients \
         and optimizer state (FSDP's FULL_SHARD), each block gathered around its use; gradients \
         keeps each block gathered from forward to backward (SHARD_GRAD_OP); none is data \
         parallel (DDP: the whole run on every GPU and its gradient buckets); optimizer is \
         ZeRO-1 (data parallel, each GPU keeping the optimizer state of its share of the \
         parameters); planned, not run",
        &[]),
    entry("strategies.offload", "offload to the host",
        &["none", "optimizer", "parameters", "activations"],
        "what lives in host memory instead of on the GPU: activations moves each checkpointed \
         block's input there between forward and its recomputation (torchtune's activation \
         offloading; needs checkpointing = layers); optimizer keeps the optimizer state there \
         and steps there (ZeRO-Offload, under full or gradients sharding); parameters keeps \
         the shards, their gradients and the optimizer state there, each block copied to the \
         GPU and gathered before it runs (FSDP2's CPUOffloadPolicy, under full sharding, on one \
         GPU or more); planned, not run",
        &[]),
    entry("strategies.lora_rank", "LoRA rank", &[],
        "the adapters' rank r: A is d_in x r, B is r x d_out", &[]),
    entry("strategies.lora_alpha", "LoRA alpha", &[],
        "the adapters' output is scaled by alpha / r", &[]),
    entry("strategies.adapter_dtype", "LoRA adapters' type", &["f32", "base"],
        "f32: the factors, their gradients and optimizer state in f32 over any base (PEFT's \
         default); base: in the base's float type (16-bit over f16)", &[]),
    entry("optimizer", "optimizer",
        &["sgd", "momentum", "adam", "adamw", "adamw8bit", "adafactor", "lion"],
        "state per weight: sgd none, momentum and lion one, adam and adamw two, adamw8bit two in \
         8 bits, adafactor a row and a column per matrix", &[
        claim("SGD instead of Adam saves two copies of the parameters", &SPIRAL,
            &["optimizer=adam"], &["optimizer=sgd"], OptimizerState, 0.1, false)
            .because("Adam keeps a first and a second moment for every parameter, in the \
             parameters' precision. Plain SGD keeps nothing between steps."),
        claim("Adam keeps two numbers per weight: Lion keeps one", &SPIRAL,
            &["optimizer=adam"], &["optimizer=lion", "learning_rate=0.001"], OptimizerState,
            0.6, false)
            .because("Lion keeps one moment per weight and steps by its sign. Adam keeps a \
             first and a second moment."),
        claim("Adam keeps two numbers per weight: Adafactor keeps a row and a column", &SPIRAL,
            &["optimizer=adam"], &["optimizer=adafactor"], OptimizerState, 0.3, false)
            .because("Adafactor keeps no first moment and factors the second moment of a d_in \
             x d_out matrix into d_in + d_out numbers. Vectors such as biases keep a full \
             second moment."),
        claim("8-bit Adam keeps a quarter of Adam's state", &DIGITS,
            &["optimizer=adamw"], &["optimizer=adamw8bit"], OptimizerState, 0.27, false)
            .because("Each moment keeps a byte per value and an f32 scale per block of 256 \
             values: a quarter of f32, and 1/64 more. Every weight matrix of the digits MLP has \
             over 4,096 values, so only its biases keep f32 moments, 0.257x of Adam's bytes in \
             all; the bar of 0.27x leaves room for the losses waiting to be read back, about 10 \
             KiB on both sides."),
    ]),
    entry("budget", "memory budget", &[],
        "pretend this GPU has only this much: 512MiB, 1536KiB, bytes, or 0.8 of the adapter's \
         largest buffer; empty for none", &[
        claim("cap the memory fraction to behave like a smaller GPU", &SPIRAL,
            &[], &[], StopsUnderBudget, 1.0, false)
            .because("cubecl has no memory cap to set, so vramlab holds the allocator's \
             high-water mark to the budget at every check point and stops the step that passes \
             it. The device is left as a fresh process would find it."),
    ]),
    entry("model.hidden", "hidden widths", &[], "the MLP's hidden layer widths", &[
        claim("a smaller model needs less memory", &SPIRAL,
            &[], &["model.hidden=[32,32]"], PeakInUse, 0.5, false)
            .because("Narrower layers mean fewer parameters, gradients and optimizer state. Each \
             sample's activations shrink with them."),
    ]),
    entry("model.kind", "model", ModelKind::NAMES,
        "the model family", &[
        claim("GRU instead of LSTM saves memory", &SORT_LSTM,
            &[], &["model.kind=gru"], PeakInUse, 0.9, false)
            .because("A GRU has three gates to an LSTM's four: a quarter fewer weights, \
             gradients and optimizer state, and in backward a smaller gradient of the inputs' \
             projections. Run as cuDNN runs them, both keep about as much per time step."),
    ]),
    entry("data.seq_len", "sequence length", &[], "tokens per input sequence", &[
        claim("shorter sequences need less memory", &SORT_GRU,
            &["data.seq_len=8"], &["data.seq_len=4"], PeakInUse, 0.75, false)
            .because("A recurrent model keeps its gates' tensors for every time step. Its \
             activations grow linearly with the sequence's length."),
        claim("attention's memory grows as the square of the sequence", &LONG_SORT,
            &[], &["data.seq_len=32"], PeakInUse, 0.5, false)
            .steps(TRANSFORMER_STEPS)
            .because("burn's attention keeps batch x heads x L x L scores and softmax weights \
             for backward, so halving L quarters them. The rest of the step, weights and \
             per-token activations, shrinks by half or not at all."),
        claim("with fused attention memory grows linearly with the sequence", &LONG_SORT_FUSED,
            &[], &["data.seq_len=32"], PeakInUse, 0.75, false)
            .steps(TRANSFORMER_STEPS)
            .because("Fused attention keeps only per-token tensors and one log-sum-exp per row, \
             so halving L halves the activations. The weights and optimizer state do not \
             shrink at all."),
    ]),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::config::{RunConfig, Strategies};

    #[test]
    fn every_strategy_field_has_one_entry_and_every_entry_names_a_field() {
        let strategies = serde_json::to_value(Strategies::default()).unwrap();
        let fields: Vec<String> = strategies
            .as_object()
            .unwrap()
            .keys()
            .map(|name| format!("strategies.{name}"))
            .collect();
        for field in &fields {
            let count = CATALOG.iter().filter(|e| e.field == field).count();
            assert_eq!(count, 1, "{field} has {count} catalog entries");
        }
        let config = serde_json::to_value(RunConfig::default()).unwrap();
        for entry in CATALOG {
            let found = entry
                .field
                .split('.')
                .try_fold(&config, |value, key| value.get(key));
            assert!(found.is_some(), "{} is not a config field", entry.field);
        }
    }
}
