// One optimizer step over the flat parameter buffer.
// hyper (f32): [lr, kind, beta1, beta2, eps, 1 - beta1^t, 1 - beta2^t, count (as f32 bits)]
// kind 0: SGD, p -= lr g; 1: momentum (PyTorch's, dampening 0), v = 0.9 v + g, p -= lr v;
// 2: Adam, with bias correction. `first` holds the velocity or Adam's first moment, `second`
// Adam's second moment; unused ones are bound to a one-element buffer.

@group(0) @binding(0) var<storage, read_write> hyper: array<f32>;
@group(0) @binding(1) var<storage, read_write> params: array<f32>;
@group(0) @binding(2) var<storage, read_write> grads: array<f32>;
@group(0) @binding(3) var<storage, read_write> first: array<f32>;
@group(0) @binding(4) var<storage, read_write> second: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let count = bitcast<u32>(hyper[7]);
    let i = (wg.y * nwg.x + wg.x) * 64u + local;
    if (i >= count) {
        return;
    }
    let lr = hyper[0];
    let kind = u32(hyper[1]);
    let g = grads[i];
    if (kind == 0u) {
        params[i] = params[i] - lr * g;
    } else if (kind == 1u) {
        let v = hyper[2] * first[i] + g;
        first[i] = v;
        params[i] = params[i] - lr * v;
    } else {
        let m = hyper[2] * first[i] + (1.0 - hyper[2]) * g;
        let s = hyper[3] * second[i] + (1.0 - hyper[3]) * g * g;
        first[i] = m;
        second[i] = s;
        params[i] = params[i] - lr * (m / hyper[5]) / (sqrt(s / hyper[6]) + hyper[4]);
    }
}
