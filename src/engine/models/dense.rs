//! A dense layer's forward pass, and which of a model's weights train.
//!
//! burn's `apply_lora` attaches a LoRA adapter to a weight's `Param`, and `Linear::forward` then
//! reads `Param::val()`: the dense effective weight `W + s A B`, materialized at every forward
//! pass and kept by the matmul for backward, a second copy of every adapted weight. People who
//! fine-tune with LoRA (PEFT's `lora.Linear`) compute `x W + s (x A) B` instead, which keeps
//! only `x A` beside the input. [`dense`] computes it that way from the same adapter, so the
//! memory a LoRA run measures is the memory LoRA users' runs hold; the models' own layers go
//! through it (burn's GRU and LSTM cells call `Linear::forward` themselves and keep burn's way).
//!
//! A base stored quantized (`strategies.weight_dtype` = `q4`, `q8`) goes through
//! `ops::quantized_linear`, which dequantizes it for the product and keeps nothing dequantized
//! for backward. The adapter's factors may be stored in another float type than the layer
//! computes in (f32 factors beside a quantized base's f16 activations): they are cast to the
//! input's type for the product, as autocast does, so `x A` is kept in that type and the
//! factors' gradients arrive in their own.

use burn::module::{Module, ModuleVisitor, Param, ParamGroup, ParamId};
use burn::nn::Linear;
use burn::tensor::module::linear;
use burn::tensor::{DType, FloatDType, Tensor};

use crate::engine::ops::quantized_linear;
pub use crate::engine::ops::walk::AdapterDepth;

/// `x W + b`, or with a LoRA adapter on `W`, `x W + b + s (x A) B` without forming `W + s A B`.
///
/// # Shapes
/// - input: `[..., d_input]`
/// - output: `[..., d_output]`
pub fn dense<const D: usize>(layer: &Linear, x: Tensor<D>) -> Tensor<D> {
    let base = layer.weight.base();
    let quantized = quantized_linear::is_quantized(&base);
    let bias = || layer.bias.as_ref().map(Param::val);
    let Some(adapter) = layer.weight.adapter() else {
        return if quantized {
            with_bias(quantized_linear::forward(x, base), bias())
        } else {
            layer.forward(x)
        };
    };
    let frozen = if quantized {
        with_bias(quantized_linear::forward(x.clone(), base), bias())
    } else {
        linear(x.clone(), base, bias())
    };
    let dtype = x.dtype();
    let a = in_dtype(adapter.a.val(), dtype);
    let b = in_dtype(adapter.b.val(), dtype);
    let low_rank = linear(linear(x, a, None), b, None);
    frozen + low_rank.mul_scalar(adapter.scale)
}

/// `y + b`, the bias broadcast over the leading dimensions, as `linear` adds it.
fn with_bias<const D: usize>(y: Tensor<D>, bias: Option<Tensor<1>>) -> Tensor<D> {
    match bias {
        Some(bias) => y + bias.unsqueeze(),
        None => y,
    }
}

/// `t` in the float type `dtype` (a cast only where the two differ).
pub(super) fn in_dtype<const D: usize>(t: Tensor<D>, dtype: DType) -> Tensor<D> {
    if t.dtype() == dtype {
        t
    } else {
        t.cast(FloatDType::from(dtype))
    }
}

/// The ids of every float parameter of `module` with `rank` dimensions (any rank: `None`).
struct Collect {
    rank: Option<usize>,
    ids: Vec<ParamId>,
}

impl ModuleVisitor for Collect {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if self.rank.is_none_or(|rank| rank == D) {
            self.ids.push(param.id);
        }
    }
}

/// Every float parameter of `modules`, as a group (a model's head).
pub fn params_of<M: Module>(modules: &[&M]) -> Vec<ParamId> {
    collect(modules, None)
}

/// The weight matrices of `modules` (what LoRA adapts).
pub fn matrices_of<M: Module>(modules: &[&M]) -> Vec<ParamId> {
    collect(modules, Some(2))
}

fn collect<M: Module>(modules: &[&M], rank: Option<usize>) -> Vec<ParamId> {
    let mut visitor = Collect {
        rank,
        ids: Vec::new(),
    };
    for module in modules {
        module.visit(&mut visitor);
    }
    visitor.ids
}

/// A model's parameters split by what fine-tuning does with them.
pub struct Parts {
    /// The output layer: what `trainable = head` trains.
    pub head: Vec<ParamId>,
    /// The weight matrices LoRA adapts: the body's, not the token embedding nor a language
    /// model's vocabulary-sized output.
    pub adapted: Vec<ParamId>,
}

impl Parts {
    pub fn head_group(&self) -> ParamGroup {
        ParamGroup::from_ids(self.head.clone())
    }

    pub fn adapted_group(&self) -> ParamGroup {
        ParamGroup::from_ids(self.adapted.clone())
    }
}

/// Parameters that require a gradient, and all of them: a visitor run once the parameters
/// exist. burn visits a LoRA adapter's factors as parameters of their own, after the frozen
/// base they adapt.
#[derive(Default)]
pub struct TrainableCount {
    pub trainable: u64,
    pub all: u64,
    /// Parameters of LoRA adapters (counted in `all` too).
    pub adapters: u64,
    /// Parameter tensors that train: each a leaf of the autodiff graph.
    pub trainable_tensors: usize,
    adapter: AdapterDepth,
}

impl ModuleVisitor for TrainableCount {
    fn enter_module(&mut self, _name: &str, container_type: &str) {
        self.adapter.enter(container_type);
    }

    fn exit_module(&mut self, _name: &str, container_type: &str) {
        self.adapter.exit(container_type);
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let values = param.lazy_shape().num_elements() as u64;
        self.all += values;
        if self.adapter.inside() {
            self.adapters += values;
        }
        // `base`, not `val`: the stored tensor, without materializing an adapted weight.
        if param.base().is_require_grad() {
            self.trainable += values;
            self.trainable_tensors += 1;
        }
    }
}
