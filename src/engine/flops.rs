//! The floating-point operations a training step of a decoder asks for, counted from its config
//! as people count "model FLOPs" (the convention of Megatron's and PaLM's utilisation figures):
//! every matrix product of the forward pass, then backward's two for each product whose weight
//! trains (the input's gradient and the weight's) and one for each frozen weight (the input's
//! gradient only). Attention's two products (scores and weighted sum) count over every query and
//! key, as naive attention computes them. Work a strategy adds (per-layer recomputation, a
//! quantized base's dequantisation) does not count: a step that recomputes is slower for the
//! same model FLOPs, which is what the figure is for. An estimate from the shapes, not a
//! count of launched kernels; element-wise work (norms, activations, softmax, the optimizer) is
//! left out, as the convention leaves it out.

use super::config::{ModelKind, RunConfig, Trainable};

/// One training step's model FLOPs, split by what they are.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepFlops {
    /// Forward: every weight product, attention's two products and the output layer's.
    pub forward: f64,
    /// Backward: the inputs' gradients (every product) and the trained weights' gradients.
    pub backward: f64,
}

impl StepFlops {
    pub fn total(&self) -> f64 {
        self.forward + self.backward
    }
}

/// The weight matrices of one block, as `(inputs, outputs, copies run for each token)`.
fn block_matrices(config: &RunConfig) -> Vec<(f64, f64, f64)> {
    let m = &config.model;
    let width = m.width as f64;
    let heads = m.heads as f64;
    let head = m.head_dim() as f64;
    let kv = m.kv_heads() as f64;
    let ff = m.ff as f64;
    let mut matrices = vec![
        (width, heads * head, 1.0),
        (width, kv * head, 1.0),
        (width, kv * head, 1.0),
        (heads * head, width, 1.0),
    ];
    match m.kind {
        // GPT-2's feed-forward: up, then down.
        ModelKind::Transformer => {
            matrices.push((width, ff, 1.0));
            matrices.push((ff, width, 1.0));
        }
        _ => {
            // Each token runs its `experts_per_token` experts (a dense block: one).
            let active = if m.experts > 0 {
                matrices.push((width, m.experts as f64, 1.0));
                m.experts_per_token.max(1) as f64
            } else {
                1.0
            };
            // Gate, up and down (a GLU: SwiGLU, GeGLU; Phi-3 fuses gate and up, same products).
            matrices.push((width, ff, active));
            matrices.push((width, ff, active));
            matrices.push((ff, width, active));
        }
    }
    matrices
}

/// Model FLOPs of one training step of `config`, or `None` for a model that is not a decoder of
/// the transformer kinds (an MLP's, a CNN's or a recurrent step is not what this counts).
pub fn training_step(config: &RunConfig) -> Option<StepFlops> {
    let m = &config.model;
    let counted = matches!(m.kind, ModelKind::Transformer) && m.decoder
        || !matches!(
            m.kind,
            ModelKind::Mlp
                | ModelKind::Cnn
                | ModelKind::Gru
                | ModelKind::Lstm
                | ModelKind::Transformer
        );
    if !counted {
        return None;
    }
    let s = &config.strategies;
    let seq = config.data.sample_tokens() as f64;
    let tokens = config.batch_size as f64 * seq;
    let layers = m.layers as f64;
    let lora_rank = s.lora_rank as f64;
    let body_trains = s.trainable == Trainable::All;
    let adapted = s.trainable == Trainable::Lora;

    // Per token, 2 FLOPs a multiply-add.
    let mut forward = 0.0;
    let mut weight_grads = 0.0;
    for (inputs, outputs, copies) in block_matrices(config) {
        let product = 2.0 * inputs * outputs * copies * layers;
        forward += product;
        if body_trains {
            weight_grads += product;
        }
        if adapted {
            // x A then (x A) B: the adapters' products, both trained.
            let adapter = 2.0 * lora_rank * (inputs + outputs) * copies * layers;
            forward += adapter;
            weight_grads += adapter;
        }
    }
    // The output layer: trained unless the body alone trains (LoRA leaves it frozen).
    let head = 2.0 * m.width as f64 * config.token_rows() as f64;
    forward += head;
    if !adapted {
        weight_grads += head;
    }
    // Scores (q k^T) and the weighted sum: each query against every key of its sequence.
    let attention = 2.0 * 2.0 * seq * (m.heads * m.head_dim()) as f64 * layers;
    forward += attention;

    let forward = forward * tokens;
    // Every product's input gradient costs what its forward did; attention's two products
    // have two inputs each, so twice.
    let input_grads = forward + attention * tokens;
    Some(StepFlops {
        forward,
        backward: input_grads + weight_grads * tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::overrides::apply_overrides;
    use crate::engine::presets::preset;

    /// GPT-2 small: 85.0M weights in its blocks (12 x 12 x 768^2 = 84,934,656) and a tied
    /// 50,257 x 768 output layer; a full step of 8 x 1,024 tokens is 6 N T for the weights
    /// plus attention's 12 T s d L.
    #[test]
    fn gpt2_small_counts_six_n_t_and_attention() {
        let config = preset("gpt2-small").unwrap();
        let flops = training_step(&config).unwrap();
        let tokens = 8.0 * 1024.0;
        let weights = 12.0 * 12.0 * 768.0 * 768.0 + 50_257.0 * 768.0;
        let attention = 12.0 * 1024.0 * 768.0 * 12.0;
        let expected = 6.0 * weights * tokens + attention * tokens;
        assert!(
            (flops.total() - expected).abs() < 1e-9 * expected,
            "{} against {expected}",
            flops.total()
        );
        assert!((flops.backward / flops.forward - 2.0).abs() < 1e-12);
    }

    /// LoRA: the frozen weights cost forward and their inputs' gradients (4 N T), the adapters
    /// 6 n T; a mixture of experts counts the experts a token runs, not all of them.
    #[test]
    fn lora_and_experts_count_what_runs() {
        let full = preset("tinyllama-1.1b").unwrap();
        let lora = apply_overrides(full.clone(), ["strategies.trainable=lora"]).unwrap();
        let (full, lora) = (training_step(&full).unwrap(), training_step(&lora).unwrap());
        assert!(lora.forward > full.forward && lora.backward < full.backward);
        let two_of_four = preset("sort-mixtral").unwrap();
        let mut four_of_four = two_of_four.clone();
        four_of_four.model.experts_per_token = 4;
        let (two, four) = (
            training_step(&two_of_four).unwrap().total(),
            training_step(&four_of_four).unwrap().total(),
        );
        // Per token and block, the experts' three matrices: 6 x 2 x 3 x 64 x 96 more.
        let tokens = 256.0 * 16.0;
        let more = 6.0 * 2.0 * 3.0 * 64.0 * 96.0 * 2.0 * tokens;
        assert!((four - two - more).abs() < 1e-9 * four);
        assert!(training_step(&preset("digits-mlp").unwrap()).is_none());
    }
}
