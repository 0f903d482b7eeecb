// Gradient with respect to a layer's input, through the ReLU that produced that input:
// d_in[b, k] = (input[b, k] > 0) * sum_j d_out[b, j] * w[k, j].
// dims: [batch, in, out, w_off, b_off, _]. 4 x 4 tiles (samples x inputs), as in forward.wgsl.

@group(0) @binding(0) var<storage, read_write> dims: array<u32>;
@group(0) @binding(1) var<storage, read_write> params: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> input: array<f32>;
@group(0) @binding(4) var<storage, read_write> d_in: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let batch = dims[0];
    let n_in = dims[1];
    let n_out = dims[2];
    let w_off = dims[3];
    let tiles_k = (n_in + 3u) / 4u;
    let index = (wg.y * nwg.x + wg.x) * 64u + local;
    if (index >= ((batch + 3u) / 4u) * tiles_k) {
        return;
    }
    let b0 = (index / tiles_k) * 4u;
    let k0 = (index % tiles_k) * 4u;
    let rows = vec4<u32>(min(b0, batch - 1u), min(b0 + 1u, batch - 1u),
                         min(b0 + 2u, batch - 1u), min(b0 + 3u, batch - 1u)) * n_out;
    let w_rows = vec4<u32>(min(k0, n_in - 1u), min(k0 + 1u, n_in - 1u),
                           min(k0 + 2u, n_in - 1u), min(k0 + 3u, n_in - 1u)) * n_out + w_off;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var j = 0u; j < n_out; j = j + 1u) {
        let w = vec4<f32>(params[w_rows.x + j], params[w_rows.y + j],
                          params[w_rows.z + j], params[w_rows.w + j]);
        acc0 = acc0 + d_out[rows.x + j] * w;
        acc1 = acc1 + d_out[rows.y + j] * w;
        acc2 = acc2 + d_out[rows.z + j] * w;
        acc3 = acc3 + d_out[rows.w + j] * w;
    }
    let tile = array<vec4<f32>, 4>(acc0, acc1, acc2, acc3);
    for (var i = 0u; i < 4u; i = i + 1u) {
        let b = b0 + i;
        if (b < batch) {
            for (var c = 0u; c < 4u; c = c + 1u) {
                let k = k0 + c;
                if (k < n_in) {
                    let at = b * n_in + k;
                    d_in[at] = select(0.0, tile[i][c], input[at] > 0.0);
                }
            }
        }
    }
}
