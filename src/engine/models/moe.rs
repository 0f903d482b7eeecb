//! A mixture-of-experts feed-forward (Mixtral's and Qwen3-MoE's sparse block), computed as
//! Hugging Face's eager implementation computes it: a router scores every expert for each
//! token, each token goes to its `top_k` experts with the softmax weights of those, renormalized
//! to sum to one; each expert (a SwiGLU) runs on the rows of the tokens it received, gathered
//! from the input, and its weighted output is added back at those rows. Nothing is dropped and
//! nothing padded: an expert holds activations for exactly the tokens it received.
//!
//! Which tokens an expert receives is data: the routing is read back to the host once a block
//! (as `torch.where` over the expert mask syncs in transformers), and the gathered rows' counts
//! size the expert's tensors. The read is awaited, so the forward pass is async (the browser
//! cannot block on the GPU); backward's recomputation of a checkpointed block routes as its
//! forward pass did, from the assignment kept then. A plan runs on a dry run, whose buffers hold
//! nothing, so it cannot read a routing: it assumes one ([`RoutingSource`]): balanced (every
//! expert receives `tokens x top_k / experts`, the remainder to the first ones) unless it is
//! handed the counts a real run logged.
//!
//! The experts' products run one of two ways (`strategies.experts`): `grouped` (the default),
//! every expert's matrices stacked `[experts, d_input, d_output]` as transformers stores them and
//! each product one grouped matmul over every expert's rows (`ops::grouped_matmul`, transformers'
//! `grouped_mm` backend); or `loop`, one `Linear` an expert and its products one by one
//! (transformers' `eager` backend). A 4- or 8-bit base is quantized a matrix at a time, so its
//! experts run the loop.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::{silu, softmax};
use burn::tensor::{DType, Device, Distribution, IndexingUpdateOp, Int, Tensor, TensorData};

use crate::engine::ops::grouped_matmul::{Groups, grouped_matmul};

use super::dense::{dense, in_dtype};
use super::drawn::Drawn;
use super::hook::{LayerHook, Op};
use super::upload::uploaded;

/// One expert: a SwiGLU feed-forward (Mixtral's `w1`, `w3`, `w2`; Qwen3-MoE's `gate_proj`,
/// `up_proj`, `down_proj`).
#[derive(Module, Debug)]
struct Expert {
    gate: Linear,
    up: Linear,
    down: Linear,
}

/// Every expert's SwiGLU, each matrix stacked over the experts (transformers' `gate_up_proj`
/// and `down_proj`, kept here as three).
#[derive(Module, Debug)]
struct ExpertStack {
    gate: Stacked,
    up: Stacked,
    down: Stacked,
}

/// One matrix of every expert, `[experts, d_input, d_output]`, with its LoRA factors once
/// adapted.
#[derive(Module, Debug)]
struct Stacked {
    weight: Param<Tensor<3>>,
    adapter: Option<StackedAdapter>,
}

/// LoRA on a stacked matrix: each expert's own factors `A` (`[experts, d_input, rank]`) and
/// `B` (`[experts, rank, d_output]`), as PEFT's `target_parameters` adapts transformers' 3-D
/// expert parameters, computed as `x W + s (x A) B` like every adapted layer here
/// (`models::dense`). Module walks know its fields as an adapter's by this struct's name
/// (`ops::walk::STACKED_ADAPTER`).
#[derive(Module, Debug)]
pub struct StackedAdapter {
    a: Param<Tensor<3>>,
    b: Param<Tensor<3>>,
    #[module(skip)]
    scale: f64,
}

/// The sparse feed-forward of one block.
#[derive(Module, Debug)]
pub struct Experts {
    /// `[width, experts]`, no bias (Mixtral's `gate`, Qwen3-MoE's `gate`).
    router: Linear,
    /// The loop's experts, one `Linear` a matrix (empty where they are stacked).
    experts: Vec<Expert>,
    /// The grouped experts' stacked matrices (`None` for the loop).
    stacked: Option<ExpertStack>,
    #[module(skip)]
    count: usize,
    #[module(skip)]
    top_k: usize,
    /// Where this block's routing comes from, shared by every block of the model.
    #[module(skip)]
    routing: Routing,
}

/// Tokens each expert received in one routed pass of one block, in expert order.
pub type RoutedCounts = Vec<usize>;

/// Where the routing of a block comes from: read from the router's choices (a real run), or
/// assumed (a plan). One log for the whole model, every block's passes in the order they ran
/// (forward passes, the recomputations of per-layer checkpointing, evaluation).
#[derive(Clone, Debug)]
pub struct Routing(Arc<Mutex<RoutingState>>);

#[derive(Debug)]
struct RoutingState {
    source: RoutingSource,
    /// Each routed pass's counts, in order.
    log: Vec<RoutedCounts>,
    /// Each pass's assignment, kept when asked (`Routing::record`).
    recorded: Option<Vec<Vec<usize>>>,
    /// The assignments of this forward pass's checkpointed blocks, for backward's
    /// recomputation to route as they did (it pops them last block first).
    recompute: Vec<Vec<usize>>,
    /// Passes meant to follow the router whose choices could not be read, routed as balanced.
    unread: usize,
}

/// What decides which tokens each expert receives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoutingSource {
    /// The router's own top-k choices, read back from the device.
    Measured,
    /// Every expert receives `tokens x top_k / experts` (a plan's assumption).
    Balanced,
    /// The counts of these passes, in order (a plan of the routing a real run logged); balanced
    /// past their end.
    Replayed(Vec<RoutedCounts>),
    /// These passes' exact assignments, in order (`Routing::recorded` of another run): two runs
    /// that differ only in how they compute (naive and fused attention) routed alike, so a
    /// router's near-tie that rounding tips one way in one run and the other way in the other
    /// does not send a token to another expert. Measured past their end.
    Assigned(Vec<Vec<usize>>),
}

impl Routing {
    pub fn new(source: RoutingSource) -> Self {
        Self(Arc::new(Mutex::new(RoutingState {
            source,
            log: Vec::new(),
            recorded: None,
            recompute: Vec::new(),
            unread: 0,
        })))
    }

    /// Keep every pass's assignment from now on, for another run to route alike.
    pub fn record(&self) {
        self.lock().recorded.get_or_insert_with(Vec::new);
    }

    /// The assignments kept since [`Routing::record`], in order.
    pub fn recorded(&self) -> Vec<Vec<usize>> {
        self.lock().recorded.clone().unwrap_or_default()
    }

    /// Route the passes from now on from `source` (a plan replaying a real run's routing).
    pub fn set_source(&self, source: RoutingSource) {
        self.lock().source = source;
    }

    /// What the passes so far sent each expert, with `top_k` choices a token.
    pub fn load(&self, top_k: usize) -> ExpertLoad {
        let state = self.lock();
        let experts = state.log.first().map_or(0, Vec::len);
        let mut tokens = vec![0u64; experts];
        let (mut largest, mut balanced) = (0, 0);
        for pass in &state.log {
            for (total, &count) in tokens.iter_mut().zip(pass) {
                *total += count as u64;
            }
            let most = pass.iter().copied().max().unwrap_or(0);
            let assignments: usize = pass.iter().sum();
            let even = assignments.div_ceil(experts.max(1));
            // The pass whose busiest expert is furthest over its even share.
            if most * balanced.max(1) > largest * even.max(1) || largest == 0 {
                (largest, balanced) = (most, even);
            }
        }
        ExpertLoad {
            source: match state.source {
                RoutingSource::Measured => "measured",
                RoutingSource::Balanced => "balanced",
                RoutingSource::Replayed(_) => "replayed",
                RoutingSource::Assigned(_) => "assigned",
            }
            .to_string(),
            experts,
            top_k,
            passes: state.log.len(),
            tokens_per_expert: tokens,
            busiest_pass_tokens: largest,
            busiest_pass_even_tokens: balanced,
            unread_passes: state.unread,
            log: state.log.clone(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RoutingState> {
        // A panic elsewhere leaves the log as it was; keep reading it.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A forward pass begins: assignments a dropped graph kept for its recomputation (a
    /// probe's) are not this pass's.
    pub fn begin_pass(&self) {
        self.lock().recompute.clear();
    }

    /// Which of `experts` each of the `tokens x top_k` assignments goes to (row-major: token,
    /// then its k choices), read from `chosen` (`[tokens, top_k]`) or assumed; kept for the
    /// recomputation of a checkpointed block when `recomputed`.
    async fn choose(&self, chosen: Tensor<2, Int>, experts: usize, recomputed: bool) -> Vec<usize> {
        let [tokens, top_k] = chosen.dims();
        // Read in every mode: the read is where the device's queued work is flushed, and a plan
        // must flush where the run does or fusion keeps other tensors alive (seen: an
        // evaluation's high-water 160 KB apart). A dry run's read would give nothing to route
        // by, and would cost the host the whole page `chosen` sits in (cubecl backs a page it
        // carved lazily once it is read: an arena page the size of the largest activation,
        // 2.5 GB a block for Qwen3-30B-A3B at 4,096 tokens); it flushes the queue as the read
        // does instead.
        let read = if burn::cubecl::dry_run::dry_run() {
            // A failed flush is the run's to report at its next reading.
            let _ = chosen.device().flush();
            None
        } else {
            chosen.into_data_async().await.ok().and_then(|data| {
                data.try_cast_as::<i64>()
                    .ok()
                    .and_then(|data| data.try_into_vec::<i64>().ok())
            })
        };
        let mut state = self.lock();
        let pass = state.log.len();
        let counted = |counts: &RoutedCounts| {
            counts.len() == experts && counts.iter().sum::<usize>() == tokens * top_k
        };
        // `None`: the router's own choices.
        let given = match &state.source {
            RoutingSource::Measured => None,
            RoutingSource::Assigned(passes) => passes
                .get(pass)
                .filter(|assignment| assignment.len() == tokens * top_k)
                .cloned(),
            RoutingSource::Balanced => Some(balanced(tokens, top_k, experts)),
            RoutingSource::Replayed(passes) => Some(match passes.get(pass) {
                Some(counts) if counted(counts) => assigned_by_counts(counts),
                _ => balanced(tokens, top_k, experts),
            }),
        };
        let assignment = match given {
            Some(assignment) => assignment,
            None => chosen_experts(read, tokens, top_k, experts).unwrap_or_else(|| {
                state.unread += 1;
                balanced(tokens, top_k, experts)
            }),
        };
        if let Some(recorded) = &mut state.recorded {
            recorded.push(assignment.clone());
        }
        let mut counts = vec![0; experts];
        for &expert in &assignment {
            counts[expert] += 1;
        }
        state.log.push(counts);
        if recomputed {
            state.recompute.push(assignment.clone());
        }
        assignment
    }

    /// The assignment the forward pass chose for the block backward now recomputes.
    fn recomputed(&self) -> Vec<usize> {
        self.lock()
            .recompute
            .pop()
            .expect("a recomputed block was routed by its forward pass")
    }
}

/// The tokens a run's routing sent each expert: the measured load a real run reports, or a
/// plan's assumption.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExpertLoad {
    /// "measured" (a real run's router), "balanced" (a plan's assumption) or "replayed" (a plan
    /// of a real run's logged routing).
    pub source: String,
    pub experts: usize,
    pub top_k: usize,
    /// Routed passes: every block's forward passes, the recomputations of per-layer
    /// checkpointing and the evaluations.
    pub passes: usize,
    /// Tokens each expert received over all the passes (a token counts once for each of its
    /// `top_k` experts).
    pub tokens_per_expert: Vec<u64>,
    /// The most tokens one expert received in one pass, in the pass furthest from even.
    pub busiest_pass_tokens: usize,
    /// What every expert of that pass would have received if it were even (rounded up).
    pub busiest_pass_even_tokens: usize,
    /// Passes of a measured routing whose choices could not be read back (the device ran out
    /// of memory earlier in the step): each was routed as balanced, a fallback `describe`
    /// names.
    #[serde(default)]
    pub unread_passes: usize,
    /// Each pass's counts, in order (for a plan that replays them; not exported).
    #[serde(skip)]
    pub log: Vec<RoutedCounts>,
}

impl ExpertLoad {
    /// The load in a sentence: a plan's assumption, or what a run's router did.
    pub fn describe(&self) -> String {
        let even = self.busiest_pass_even_tokens;
        if self.source == "balanced" {
            return format!(
                "routing assumed even: each of the {} experts receives tokens x {} / {} = {even} \
                 tokens a pass (routing is data: a real run reports what its router did)",
                self.experts, self.top_k, self.experts
            );
        }
        let least = self.tokens_per_expert.iter().min().copied().unwrap_or(0);
        let most = self.tokens_per_expert.iter().max().copied().unwrap_or(0);
        let total: u64 = self.tokens_per_expert.iter().sum();
        let ratio = self.busiest_pass_tokens as f64 / even.max(1) as f64;
        let unread = match self.unread_passes {
            0 => String::new(),
            n => format!(
                "; {n} of the passes could not read the router's choices and were routed as \
                 balanced instead (a fallback: the figures include them)"
            ),
        };
        format!(
            "routing {} over {} passes: the {} experts received {least} to {most} tokens each \
             (even: {}); in the pass furthest from even one expert received {} tokens where \
             even routing gives {even} ({ratio:.2}x){unread}",
            self.source,
            self.passes,
            self.experts,
            total / self.experts.max(1) as u64,
            self.busiest_pass_tokens
        )
    }
}

/// The router's choices as read from the device; `None` where the read failed (the device ran
/// out of memory earlier in the step), which the caller routes as balanced and counts.
fn chosen_experts(
    read: Option<Vec<i64>>,
    tokens: usize,
    top_k: usize,
    experts: usize,
) -> Option<Vec<usize>> {
    read.filter(|ids| ids.len() == tokens * top_k).map(|ids| {
        ids.into_iter()
            .map(|id| (id.max(0) as usize).min(experts - 1))
            .collect()
    })
}

/// Assignment `a` (token `a / top_k`, its choice `a % top_k`) goes to expert `a % experts`:
/// counts as even as they can be, and no token sent twice to one expert (`top_k <= experts`).
fn balanced(tokens: usize, top_k: usize, experts: usize) -> Vec<usize> {
    (0..tokens * top_k).map(|a| a % experts).collect()
}

/// An assignment with these counts per expert, each expert's assignments in a run. Which
/// token goes where does not change a tensor's size; the counts do.
fn assigned_by_counts(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .enumerate()
        .flat_map(|(expert, &count)| std::iter::repeat_n(expert, count))
        .collect()
}

/// The sizes of one block's experts.
pub struct ExpertsSize {
    pub width: usize,
    /// Each expert's SwiGLU width (Mixtral's `intermediate_size`, Qwen3-MoE's
    /// `moe_intermediate_size`).
    pub ff: usize,
    pub experts: usize,
    pub top_k: usize,
    /// Stacked matrices and grouped products (`strategies.experts = grouped`), or a `Linear`
    /// an expert and the loop.
    pub grouped: bool,
}

impl Experts {
    pub fn new(size: &ExpertsSize, routing: Routing, drawn: &Drawn) -> Self {
        let linear =
            |inputs, outputs| drawn.linear(&LinearConfig::new(inputs, outputs).with_bias(false));
        // Each expert's matrix drawn as its `Linear` would be: burn's default initializer
        // over the same fans.
        let stacked = |inputs, outputs| Stacked {
            weight: drawn.param(
                &LinearConfig::new(inputs, outputs).initializer,
                [size.experts, inputs, outputs],
                Some(inputs),
                Some(outputs),
            ),
            adapter: None,
        };
        let (experts, stacked) = if size.grouped {
            let stack = ExpertStack {
                gate: stacked(size.width, size.ff),
                up: stacked(size.width, size.ff),
                down: stacked(size.ff, size.width),
            };
            (Vec::new(), Some(stack))
        } else {
            let experts = (0..size.experts)
                .map(|_| Expert {
                    gate: linear(size.width, size.ff),
                    up: linear(size.width, size.ff),
                    down: linear(size.ff, size.width),
                })
                .collect();
            (experts, None)
        };
        Self {
            router: linear(size.width, size.experts),
            experts,
            stacked,
            count: size.experts,
            top_k: size.top_k,
            routing,
        }
    }

    /// LoRA's factors on each stacked matrix (burn's `apply_lora` adapts matrices, and froze
    /// the stacks); the loop's `Linear`s were adapted by it already.
    pub fn with_stacked_adapters(mut self, rank: usize, alpha: f64) -> Self {
        if let Some(stack) = &mut self.stacked {
            for matrix in [&mut stack.gate, &mut stack.up, &mut stack.down] {
                matrix.adapt(rank, alpha);
            }
        }
        self
    }

    /// The expert mixture of `x`, the routing read back from the device (awaited); kept for
    /// backward's recomputation when `recomputed` (the block is checkpointed).
    ///
    /// # Shapes
    /// - input: `[batch, length, width]`
    /// - output: `[batch, length, width]`
    pub async fn forward(
        &self,
        x: Tensor<3>,
        hook: &mut impl LayerHook,
        recomputed: bool,
    ) -> Tensor<3> {
        let routed = self.route(x);
        hook.after(Op::Router);
        let assignment = self
            .routing
            .choose(routed.chosen.clone(), self.count, recomputed)
            .await;
        // Uploaded here, straight after the read drained the device's queue. Uploaded between
        // the experts' kernels, an expert's index tensors were allocated before one launch in
        // some plans and after it in others, identical plans in one process (fusion decides
        // when queued kernels launch): sort-mixtral's plan came out 3,776 B under its run in
        // one case in ten (two index tensors of 1,888 B), and 65,984 B under in evaluation.
        let dispatch = Dispatch::upload(
            &assignment,
            self.count,
            self.top_k,
            self.stacked.is_some(),
            &routed.rows.device(),
        );
        self.combine(routed, &dispatch, hook)
    }

    /// The expert mixture of `x` as backward recomputes a checkpointed block: routed as its
    /// forward pass was.
    pub fn forward_recomputed(&self, x: Tensor<3>, hook: &mut impl LayerHook) -> Tensor<3> {
        // Uploaded before the router's kernels are queued (see `forward`).
        let assignment = self.routing.recomputed();
        let dispatch = Dispatch::upload(
            &assignment,
            self.count,
            self.top_k,
            self.stacked.is_some(),
            &x.device(),
        );
        let routed = self.route(x);
        hook.after(Op::Router);
        self.combine(routed, &dispatch, hook)
    }

    /// The router: each token's top-k experts and their weights, softmax in f32 as
    /// transformers computes it, renormalized and cast back to the activations' type.
    fn route(&self, x: Tensor<3>) -> Routed {
        let [batch, length, width] = x.dims();
        let tokens = batch * length;
        let rows = x.reshape([tokens, width]);
        let scores = softmax(dense(&self.router, rows.clone()).cast(DType::F32), 1);
        let experts = self.count;
        let chosen = if self.top_k < experts {
            scores.clone().detach().argtopk(self.top_k, 1)
        } else {
            // Every token to every expert (`experts_per_token = experts`, which configs may
            // state): burn's top-k asks for fewer than all, and the order of the chosen does
            // not change the mixture.
            Tensor::<1, Int>::arange(0..experts as i64, &rows.device())
                .unsqueeze_dim::<2>(0)
                .repeat_dim(0, tokens)
        };
        let weights = scores.gather(1, chosen.clone());
        let weights = weights.clone() / weights.sum_dim(1);
        let dtype = rows.dtype();
        Routed {
            weights: weights.cast(dtype).reshape([tokens * self.top_k]),
            rows,
            chosen,
            shape: [batch, length, width],
        }
    }

    /// Each expert on the rows `dispatch` sends it, weighted, added back at their rows.
    fn combine(&self, routed: Routed, dispatch: &Dispatch, hook: &mut impl LayerHook) -> Tensor<3> {
        let Routed {
            rows,
            weights,
            chosen,
            shape,
        } = routed;
        drop(chosen);
        let [tokens, width] = rows.dims();
        let device = rows.device();
        let mut out = Tensor::<2>::zeros([tokens, width], (&device, rows.dtype()));
        if let (Some(stack), Some(groups)) = (&self.stacked, &dispatch.groups) {
            // Every expert's rows in expert order, each product one grouped matmul over them.
            let input = rows.select(0, dispatch.tokens.clone());
            let hidden =
                silu(stack.gate.product(input.clone(), groups)) * stack.up.product(input, groups);
            let output = stack.down.product(hidden, groups)
                * weights.select(0, dispatch.slots.clone()).unsqueeze_dim(1);
            out = out.select_assign(0, dispatch.tokens.clone(), output, IndexingUpdateOp::Add);
            hook.after(Op::Experts);
            return out.reshape(shape);
        }
        for (expert, range) in self.experts.iter().zip(&dispatch.ranges) {
            if range.is_empty() {
                continue;
            }
            let token_ids = dispatch.tokens.clone().slice(range.clone());
            let slots = dispatch.slots.clone().slice(range.clone());
            let input = rows.clone().select(0, token_ids.clone());
            let hidden = silu(dense(&expert.gate, input.clone())) * dense(&expert.up, input);
            let output =
                dense(&expert.down, hidden) * weights.clone().select(0, slots).unsqueeze_dim(1);
            out = out.select_assign(0, token_ids, output, IndexingUpdateOp::Add);
        }
        hook.after(Op::Experts);
        out.reshape(shape)
    }
}

/// Where each expert's rows come from, uploaded once a pass: every slot (token `slot / top_k`,
/// its weight `slot`) in expert order, the tokens of those slots, and each expert's range of
/// them (on the host for the loop; uploaded as groups for the grouped products alone).
struct Dispatch {
    slots: Tensor<1, Int>,
    tokens: Tensor<1, Int>,
    ranges: Vec<Range<usize>>,
    groups: Option<Groups>,
}

impl Dispatch {
    fn upload(
        assignment: &[usize],
        experts: usize,
        top_k: usize,
        grouped: bool,
        device: &Device,
    ) -> Self {
        let mut slots_of = vec![Vec::new(); experts];
        for (slot, &expert) in assignment.iter().enumerate() {
            slots_of[expert].push(slot as i64);
        }
        let mut slots = Vec::with_capacity(assignment.len());
        let ranges: Vec<Range<usize>> = slots_of
            .into_iter()
            .map(|of| {
                let start = slots.len();
                slots.extend(of);
                start..slots.len()
            })
            .collect();
        let tokens: Vec<i64> = slots.iter().map(|&slot| slot / top_k as i64).collect();
        // Past the small pool's 64 KiB: unwritten under a dry run (`uploaded`).
        let upload = |values: Vec<i64>| {
            let len = values.len();
            uploaded::<1, Int>([len], device, || TensorData::new(values, [len]))
        };
        let groups = grouped.then(|| {
            let counts: Vec<usize> = ranges.iter().map(Range::len).collect();
            Groups::new(&counts, upload)
        });
        Self {
            slots: upload(slots),
            tokens: upload(tokens),
            ranges,
            groups,
        }
    }
}

/// A block's routing before the experts run.
struct Routed {
    /// The input, a row a token.
    rows: Tensor<2>,
    /// Each token's top-k weights, flattened (`[tokens x top_k]`).
    weights: Tensor<1>,
    /// Each token's top-k experts (`[tokens, top_k]`).
    chosen: Tensor<2, Int>,
    shape: [usize; 3],
}

impl Stacked {
    /// `x W[e]` for each row's expert `e`, plus `s (x A[e]) B[e]` where adapted.
    fn product(&self, x: Tensor<2>, groups: &Groups) -> Tensor<2> {
        let dtype = x.dtype();
        let frozen = grouped_matmul(x.clone(), in_dtype(self.weight.val(), dtype), groups);
        let Some(adapter) = &self.adapter else {
            return frozen;
        };
        let a = in_dtype(adapter.a.val(), dtype);
        let b = in_dtype(adapter.b.val(), dtype);
        let low_rank = grouped_matmul(grouped_matmul(x, a, groups), b, groups);
        frozen + low_rank.mul_scalar(adapter.scale)
    }

    /// Give this matrix LoRA factors as burn's `Lora` gives a matrix: `A ~ N(0, 1 / rank)`,
    /// `B = 0`, in the weight's float type, allocated as parameters.
    fn adapt(&mut self, rank: usize, alpha: f64) {
        let base = self.weight.val();
        let [experts, inputs, outputs] = base.dims();
        let (device, dtype) = (base.device(), base.dtype());
        let (a, b) = device.memory_persistent_allocations((), |_| {
            let a = Tensor::<3>::random(
                [experts, inputs, rank],
                Distribution::Normal(0.0, 1.0 / rank as f64),
                &device,
            );
            let b = Tensor::<3>::zeros([experts, rank, outputs], &device);
            (in_dtype(a, dtype), in_dtype(b, dtype))
        });
        self.adapter = Some(StackedAdapter {
            a: Param::from_tensor(a),
            b: Param::from_tensor(b),
            scale: alpha / rank as f64,
        });
    }
}
