// One dense layer: output[b, j] = act(bias[j] + sum_k input[b, k] * w[k, j]).
// act is ReLU when dims[5] == 1 (hidden layers), identity for the logits. The output is kept
// until backward: it is what ReLU's derivative needs.
// Each invocation computes a 4 x 4 tile (4 samples, 4 outputs): 16 multiply-adds per 8 loads
// instead of 1 per 2, which is what decides the speed on a software GPU (SwiftShader).
// Edge tiles read clamped indices and skip the stores that fall outside.

@group(0) @binding(0) var<storage, read_write> dims: array<u32>;
@group(0) @binding(1) var<storage, read_write> params: array<f32>;
@group(0) @binding(2) var<storage, read_write> input: array<f32>;
@group(0) @binding(3) var<storage, read_write> output: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let batch = dims[0];
    let n_in = dims[1];
    let n_out = dims[2];
    let w_off = dims[3];
    let b_off = dims[4];
    let tiles_j = (n_out + 3u) / 4u;
    let index = (wg.y * nwg.x + wg.x) * 64u + local;
    if (index >= ((batch + 3u) / 4u) * tiles_j) {
        return;
    }
    let b0 = (index / tiles_j) * 4u;
    let j0 = (index % tiles_j) * 4u;
    let rows = vec4<u32>(min(b0, batch - 1u), min(b0 + 1u, batch - 1u),
                         min(b0 + 2u, batch - 1u), min(b0 + 3u, batch - 1u)) * n_in;
    let cols = vec4<u32>(min(j0, n_out - 1u), min(j0 + 1u, n_out - 1u),
                         min(j0 + 2u, n_out - 1u), min(j0 + 3u, n_out - 1u));
    let bias = vec4<f32>(params[b_off + cols.x], params[b_off + cols.y],
                         params[b_off + cols.z], params[b_off + cols.w]);
    var acc0 = bias;
    var acc1 = bias;
    var acc2 = bias;
    var acc3 = bias;
    for (var k = 0u; k < n_in; k = k + 1u) {
        let w_row = w_off + k * n_out;
        let w = vec4<f32>(params[w_row + cols.x], params[w_row + cols.y],
                          params[w_row + cols.z], params[w_row + cols.w]);
        acc0 = acc0 + input[rows.x + k] * w;
        acc1 = acc1 + input[rows.y + k] * w;
        acc2 = acc2 + input[rows.z + k] * w;
        acc3 = acc3 + input[rows.w + k] * w;
    }
    if (dims[5] == 1u) {
        acc0 = max(acc0, vec4<f32>(0.0));
        acc1 = max(acc1, vec4<f32>(0.0));
        acc2 = max(acc2, vec4<f32>(0.0));
        acc3 = max(acc3, vec4<f32>(0.0));
    }
    let tile = array<vec4<f32>, 4>(acc0, acc1, acc2, acc3);
    for (var i = 0u; i < 4u; i = i + 1u) {
        let b = b0 + i;
        if (b < batch) {
            for (var c = 0u; c < 4u; c = c + 1u) {
                if (j0 + c < n_out) {
                    output[b * n_out + j0 + c] = tile[i][c];
                }
            }
        }
    }
}
