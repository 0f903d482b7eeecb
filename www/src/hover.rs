//! Hover read-outs: where across a chart the pointer is, in the chart's own coordinates (the
//! nearest point to it is `engine::plot::nearest`'s to find).

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
