//! Host values a model uploads to its device (tables, index lists), as a plan follows them.
//!
//! A dry run allocates the same tensor and writes nothing, since nothing in a dry run reads it.
//! A write would back the lazily carved page it lands in with host memory, and past the small
//! pool's 64 KiB that is an arena page sized to the largest allocation the pools have served:
//! the experts' dispatch indices in a block's page of logits, or a suggestion's rotary tables
//! in the page of the plan before it (2.1 GB of such pages for a two-block Llama-3.1-8B at
//! 4,096 tokens, past what the page's wasm worker can hold).

use burn::tensor::kind::Basic;
use burn::tensor::{Device, Tensor, TensorData};

/// A `shape` tensor of `values` on `device`; under a dry run, the same allocation unwritten
/// and `values` never computed.
pub fn uploaded<const D: usize, K: Basic>(
    shape: [usize; D],
    device: &Device,
    values: impl FnOnce() -> TensorData,
) -> Tensor<D, K> {
    if burn::cubecl::dry_run::dry_run() {
        Tensor::empty(shape, device)
    } else {
        Tensor::from_data(values(), device)
    }
}
