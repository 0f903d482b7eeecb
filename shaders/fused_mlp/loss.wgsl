// Softmax cross-entropy over a batch, in one workgroup: the mean loss into loss[0], and the
// gradient of that mean with respect to the logits, (softmax - onehot) / batch, into d_logits.
// dims: [batch, classes]. Labels are class indices.

@group(0) @binding(0) var<storage, read_write> dims: array<u32>;
@group(0) @binding(1) var<storage, read_write> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> labels: array<u32>;
@group(0) @binding(3) var<storage, read_write> d_logits: array<f32>;
@group(0) @binding(4) var<storage, read_write> loss: array<f32>;

var<workgroup> partial: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) local: u32) {
    let batch = dims[0];
    let classes = dims[1];
    let scale = 1.0 / f32(batch);
    var sum = 0.0;
    for (var b = local; b < batch; b = b + 64u) {
        let row = b * classes;
        var top = logits[row];
        for (var c = 1u; c < classes; c = c + 1u) {
            top = max(top, logits[row + c]);
        }
        var total = 0.0;
        for (var c = 0u; c < classes; c = c + 1u) {
            total = total + exp(logits[row + c] - top);
        }
        let label = labels[b];
        for (var c = 0u; c < classes; c = c + 1u) {
            let p = exp(logits[row + c] - top) / total;
            d_logits[row + c] = (p - select(0.0, 1.0, c == label)) * scale;
        }
        sum = sum + (log(total) + top - logits[row + label]);
    }
    partial[local] = sum;
    workgroupBarrier();
    for (var stride = 32u; stride > 0u; stride = stride / 2u) {
        if (local < stride) {
            partial[local] = partial[local] + partial[local + stride];
        }
        workgroupBarrier();
    }
    if (local == 0u) {
        loss[0] = partial[0] * scale;
    }
}
