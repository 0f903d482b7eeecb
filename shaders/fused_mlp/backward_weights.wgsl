// A layer's weight and bias gradients, summed over the batch:
// grads[w_off + k*out + j] = sum_b input[b, k] * d_out[b, j]; grads[b_off + j] = sum_b d_out[b, j].
// The bias is row k == in, whose input is 1. 4 x 4 tiles (inputs x outputs), as in forward.wgsl.
// dims: [batch, in, out, w_off, b_off, _].

@group(0) @binding(0) var<storage, read_write> dims: array<u32>;
@group(0) @binding(1) var<storage, read_write> input: array<f32>;
@group(0) @binding(2) var<storage, read_write> d_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> grads: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let batch = dims[0];
    let n_in = dims[1];
    let n_out = dims[2];
    let tiles_j = (n_out + 3u) / 4u;
    let index = (wg.y * nwg.x + wg.x) * 64u + local;
    if (index >= ((n_in + 4u) / 4u) * tiles_j) {
        return;
    }
    let k0 = (index / tiles_j) * 4u;
    let j0 = (index % tiles_j) * 4u;
    let ks = vec4<u32>(k0, k0 + 1u, k0 + 2u, k0 + 3u);
    // Column n_in is the bias's constant 1; columns past it are padding.
    let is_bias = ks == vec4<u32>(n_in);
    let ks_read = min(ks, vec4<u32>(n_in - 1u));
    let cols = vec4<u32>(min(j0, n_out - 1u), min(j0 + 1u, n_out - 1u),
                         min(j0 + 2u, n_out - 1u), min(j0 + 3u, n_out - 1u));
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var b = 0u; b < batch; b = b + 1u) {
        let row = b * n_in;
        let x = select(vec4<f32>(input[row + ks_read.x], input[row + ks_read.y],
                                 input[row + ks_read.z], input[row + ks_read.w]),
                       vec4<f32>(1.0), is_bias);
        let g_row = b * n_out;
        let g = vec4<f32>(d_out[g_row + cols.x], d_out[g_row + cols.y],
                          d_out[g_row + cols.z], d_out[g_row + cols.w]);
        acc0 = acc0 + x.x * g;
        acc1 = acc1 + x.y * g;
        acc2 = acc2 + x.z * g;
        acc3 = acc3 + x.w * g;
    }
    let tile = array<vec4<f32>, 4>(acc0, acc1, acc2, acc3);
    for (var i = 0u; i < 4u; i = i + 1u) {
        let k = k0 + i;
        for (var c = 0u; c < 4u; c = c + 1u) {
            let j = j0 + c;
            if (j < n_out) {
                if (k < n_in) {
                    grads[dims[3] + k * n_out + j] = tile[i][c];
                } else if (k == n_in) {
                    grads[dims[4] + j] = tile[i][c];
                }
            }
        }
    }
}
