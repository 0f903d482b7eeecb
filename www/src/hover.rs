//! Hover read-outs: where across a chart the pointer is, in the chart's own coordinates.

use wasm_bindgen::JsCast;

/// How far across the element that handles `event` the pointer is: 0 at its left edge, 1 at its
/// right. (Read through `getBoundingClientRect` by name: web-sys's `DomRect` feature would
/// rebuild every crate that shares web-sys, wgpu among them.)
fn fraction_across(event: &web_sys::MouseEvent) -> Option<f64> {
    let target = event.current_target()?;
    let target: &wasm_bindgen::JsValue = target.as_ref();
    let get = |object: &wasm_bindgen::JsValue, name: &str| {
        js_sys::Reflect::get(object, &name.into()).ok()
    };
    let rect = get(target, "getBoundingClientRect")?
        .dyn_into::<js_sys::Function>()
        .ok()?
        .call0(target)
        .ok()?;
    let left = get(&rect, "left")?.as_f64()?;
    let width = get(&rect, "width")?.as_f64()?;
    (width > 0.0).then(|| (f64::from(event.client_x()) - left) / width)
}

/// The view-box x under the pointer, for a chart whose view box is `view_width` wide.
pub fn view_x(event: &web_sys::MouseEvent, view_width: f64) -> Option<f64> {
    fraction_across(event).map(|fraction| fraction * view_width)
}

/// The index of the x in `xs` (ascending) nearest to `x`.
pub fn nearest(xs: &[f64], x: f64) -> Option<usize> {
    if xs.is_empty() {
        return None;
    }
    let after = xs.partition_point(|&v| v < x);
    let candidates = [after.checked_sub(1), (after < xs.len()).then_some(after)];
    candidates
        .into_iter()
        .flatten()
        .min_by(|&a, &b| (xs[a] - x).abs().total_cmp(&(xs[b] - x).abs()))
}

#[cfg(test)]
mod tests {
    use super::nearest;

    #[test]
    fn the_nearest_x_wins_and_ends_clamp() {
        let xs = [1.0, 2.0, 4.0];
        assert_eq!(nearest(&xs, 2.9), Some(1));
        assert_eq!(nearest(&xs, 3.1), Some(2));
        assert_eq!(nearest(&xs, -5.0), Some(0));
        assert_eq!(nearest(&xs, 9.0), Some(2));
        assert_eq!(nearest(&[], 1.0), None);
    }
}
