//! Crossing from burn's dispatch tensors to the backend vramlab's own autodiff ops are written
//! for, and back. burn 0.22.1 has one cubecl backend (`Cube`: fusion over every cubecl runtime,
//! Vulkan natively and WebGPU in the browser), wrapped in `Autodiff<Cube, C>` on a training
//! device, where `C` is the gradient-checkpointing strategy the device was set up with.
//!
//! An op here does its arithmetic with ordinary `Tensor` calls on *plain* tensors (no autodiff
//! context): [`plain`] wraps a raw `Cube` primitive as one and [`raw`] unwraps it. On a training
//! device it records one node of its own ([`Recorded`]) whose backward is handwritten, so autodiff
//! keeps exactly the state the op chose and nothing of its intermediates.

use burn::backend::autodiff::checkpoint::strategy::{
    BalancedCheckpointing, CheckpointStrategy, NoCheckpointing,
};
use burn::backend::{Autodiff, AutodiffBackend, Cube, DispatchAutodiffContext};
use burn::tensor::{BackendPrimitive, Float, GradientCheckpointingStrategy, Int, Tensor};

/// A float tensor of the cubecl backend, outside autodiff.
pub type Raw = <Float as BackendPrimitive<Cube>>::Primitive;
/// An int tensor of the cubecl backend (int tensors are the same inside and outside autodiff).
pub type RawInt = <Int as BackendPrimitive<Cube>>::Primitive;
/// A float tensor recorded by autodiff over the cubecl backend, with strategy `C`.
pub type Tracked<C> = <Float as BackendPrimitive<Autodiff<Cube, C>>>::Primitive;

/// How a tensor reaches the backend: plainly, or through autodiff with a checkpointing strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Plain,
    Autodiff(GradientCheckpointingStrategy),
}

impl Route {
    /// The route of `tensor`, or `None` on a backend other than cubecl (none is built here, but
    /// the caller then takes burn's own path instead of failing).
    pub fn of<const D: usize>(tensor: &Tensor<D>) -> Option<Self> {
        let dispatch = tensor.clone().into_dispatch();
        let route = match dispatch.autodiff {
            DispatchAutodiffContext::Disabled => Self::Plain,
            DispatchAutodiffContext::Enabled(strategy) => Self::Autodiff(strategy),
        };
        let probe = Tensor::<D>::from_dispatch(dispatch);
        let reachable = match route {
            Self::Plain => probe.try_into_primitive::<Cube>().is_ok(),
            Self::Autodiff(GradientCheckpointingStrategy::Disabled) => probe
                .try_into_primitive::<Autodiff<Cube, NoCheckpointing>>()
                .is_ok(),
            Self::Autodiff(GradientCheckpointingStrategy::Balanced) => probe
                .try_into_primitive::<Autodiff<Cube, BalancedCheckpointing>>()
                .is_ok(),
        };
        reachable.then_some(route)
    }
}

/// A raw float primitive as a plain tensor (ops on it record nothing).
pub fn plain<const D: usize>(tensor: Raw) -> Tensor<D> {
    Tensor::from_primitive::<Cube>(tensor)
}

/// The raw primitive of a plain float tensor.
pub fn raw<const D: usize>(tensor: Tensor<D>) -> Raw {
    tensor
        .try_into_primitive::<Cube>()
        .expect("ops on plain cubecl tensors stay plain cubecl tensors")
}

/// A raw int primitive as a plain tensor.
pub fn plain_int<const D: usize>(tensor: RawInt) -> Tensor<D, Int> {
    Tensor::from_primitive::<Cube>(tensor)
}

/// The raw primitive of an int tensor on either kind of device.
pub fn raw_int<const D: usize>(tensor: Tensor<D, Int>) -> Option<RawInt> {
    let dispatch = tensor.into_dispatch();
    let tensor = Tensor::<D, Int>::from_dispatch(dispatch.clone());
    match dispatch.autodiff {
        DispatchAutodiffContext::Disabled => tensor.try_into_primitive::<Cube>().ok(),
        DispatchAutodiffContext::Enabled(GradientCheckpointingStrategy::Disabled) => tensor
            .try_into_primitive::<Autodiff<Cube, NoCheckpointing>>()
            .ok(),
        DispatchAutodiffContext::Enabled(GradientCheckpointingStrategy::Balanced) => tensor
            .try_into_primitive::<Autodiff<Cube, BalancedCheckpointing>>()
            .ok(),
    }
}

/// An op that records one autodiff node of its own: `record` gets the inputs as tracked
/// primitives of `Autodiff<Cube, C>` and returns the output. Called through [`run_recorded`],
/// which picks `C` from the tensors' route.
pub trait Recorded<const N: usize> {
    fn record<C: CheckpointStrategy>(self, inputs: [Tracked<C>; N]) -> Tracked<C>;
}

/// Run `op` on `inputs` (all on an autodiff device with `strategy`) and wrap its output. An input
/// that is not tracked (a constant) enters as an untracked node.
pub fn run_recorded<const N: usize, const D: usize, const DO: usize>(
    op: impl Recorded<N>,
    strategy: GradientCheckpointingStrategy,
    inputs: [Tensor<D>; N],
) -> Tensor<DO> {
    fn go<const N: usize, const D: usize, const DO: usize, C>(
        op: impl Recorded<N>,
        inputs: [Tensor<D>; N],
    ) -> Tensor<DO>
    where
        C: CheckpointStrategy,
        Autodiff<Cube, C>: AutodiffBackend<InnerBackend = Cube>,
        burn::tensor::DispatchTensor: burn::backend::DispatchKindConversion<Autodiff<Cube, C>>,
    {
        let tracked = inputs.map(|tensor| {
            let dispatch = tensor.into_dispatch();
            match dispatch.autodiff {
                DispatchAutodiffContext::Enabled(_) => Tensor::<D>::from_dispatch(dispatch)
                    .try_into_primitive::<Autodiff<Cube, C>>()
                    .expect("Route::of checked this tensor's backend"),
                DispatchAutodiffContext::Disabled => {
                    let inner = Tensor::<D>::from_dispatch(dispatch)
                        .try_into_primitive::<Cube>()
                        .expect("Route::of checked this tensor's backend");
                    <Autodiff<Cube, C> as AutodiffBackend>::from_inner(inner)
                }
            }
        });
        Tensor::from_primitive::<Autodiff<Cube, C>>(op.record::<C>(tracked))
    }
    match strategy {
        GradientCheckpointingStrategy::Disabled => go::<N, D, DO, NoCheckpointing>(op, inputs),
        GradientCheckpointingStrategy::Balanced => {
            go::<N, D, DO, BalancedCheckpointing>(op, inputs)
        }
    }
}
