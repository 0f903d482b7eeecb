//! Parameters drawn in the type they are stored in.
//!
//! A 16-bit fine-tune in PyTorch never holds its weights in f32: transformers' `from_pretrained`
//! with `torch_dtype=torch.bfloat16` and torchtune's `set_default_dtype` build every parameter
//! in 16 bits. Built in f32 and then cast one parameter at a time, as `model.half()` does,
//! set-up would hold every 16-bit weight cast so far beside the f32 original of the one being
//! cast: for a Llama-3.1-8B at two blocks, 4.85 GiB at set-up against 2.90 GiB of weights, more
//! than its training steps held. So the llama family (the published models people fine-tune)
//! draws its parameters in their stored type; the small models of the lessons are built in f32
//! and halved, as people write them (`model = Net(); model.half()`).
//!
//! In f32 a parameter is burn's own (`Initializer::init_with`), draw for draw. In another type
//! it is drawn from the same distribution in that type, lazily as burn draws it, in the
//! persistent allocations burn's initializer uses.

use burn::module::{Initializer, Param, ParamId};
use burn::nn::{Linear, LinearConfig, LinearLayout};
use burn::tensor::{DType, Device, Distribution, FloatDType, Shape, Tensor, TensorCreationOptions};

/// Draws parameters in `dtype` on `device`.
#[derive(Clone, Debug)]
pub struct Drawn {
    dtype: FloatDType,
    device: Device,
}

impl Drawn {
    pub fn new(dtype: FloatDType, device: &Device) -> Self {
        Self {
            dtype,
            device: device.clone(),
        }
    }

    /// A parameter of `shape` drawn by `initializer` (its fans as burn's `init_with` takes them).
    pub fn param<const D: usize>(
        &self,
        initializer: &Initializer,
        shape: [usize; D],
        fan_in: Option<usize>,
        fan_out: Option<usize>,
    ) -> Param<Tensor<D>> {
        if self.dtype == FloatDType::F32 {
            return initializer.init_with(shape, fan_in, fan_out, &self.device);
        }
        let (initializer, dtype) = (initializer.clone(), self.dtype);
        Param::uninitialized(
            ParamId::new(),
            move |device: &Device, require_grad| {
                let initializer = initializer.clone();
                device.memory_persistent_allocations((), move |_| {
                    let tensor = draw(&initializer, shape, fan_in, fan_out, device, dtype);
                    if require_grad {
                        tensor.require_grad()
                    } else {
                        tensor
                    }
                })
            },
            self.device.clone(),
            true,
            Shape::from(shape),
        )
    }

    /// `config`'s linear layer (row layout: `[d_input, d_output]`), as `LinearConfig::init`
    /// draws it.
    pub fn linear(&self, config: &LinearConfig) -> Linear {
        assert!(
            matches!(config.layout, LinearLayout::Row),
            "the llama family stores its matrices in rows"
        );
        let fans = (Some(config.d_input), Some(config.d_output));
        Linear {
            weight: self.param(
                &config.initializer,
                [config.d_input, config.d_output],
                fans.0,
                fans.1,
            ),
            bias: config
                .bias
                .then(|| self.param(&config.initializer, [config.d_output], fans.0, fans.1)),
        }
    }
}

/// One tensor drawn as `initializer` draws it in f32, in `dtype`.
fn draw<const D: usize>(
    initializer: &Initializer,
    shape: [usize; D],
    fan_in: Option<usize>,
    fan_out: Option<usize>,
    device: &Device,
    dtype: FloatDType,
) -> Tensor<D> {
    let options = TensorCreationOptions::new(device.clone()).with_dtype(DType::from(dtype));
    let random = |distribution| Tensor::<D>::random(shape, distribution, options.clone());
    match initializer {
        Initializer::Constant { value } => Tensor::full(shape, *value, options.clone()),
        Initializer::Ones => Tensor::ones(shape, options.clone()),
        Initializer::Zeros => Tensor::zeros(shape, options.clone()),
        Initializer::Uniform { min, max } => random(Distribution::Uniform(*min, *max)),
        Initializer::Normal { mean, std } => random(Distribution::Normal(*mean, *std)),
        Initializer::KaimingUniform { gain, fan_out_only } => {
            let fan = if *fan_out_only { fan_out } else { fan_in };
            let fan = fan.expect("a Kaiming initializer is drawn with its fans");
            let bound = 3.0f64.sqrt() * gain / (fan as f64).sqrt();
            random(Distribution::Uniform(-bound, bound))
        }
        // Not used by the llama family: drawn by burn in f32 and cast, which holds that one
        // f32 tensor for a moment.
        other => other
            .init_with(shape, fan_in, fan_out, device)
            .val()
            .cast(dtype),
    }
}
