//! Small calls into the browser that several panels make: save a text as a file, scroll an
//! element into view.

use wasm_bindgen::JsCast;

/// Offer `text` as a download named `name`.
pub fn download(name: &str, mime: &str, text: &str) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let parts = js_sys::Array::of1(&text.into());
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    if let Ok(anchor) = document.create_element("a")
        && let Ok(anchor) = anchor.dyn_into::<web_sys::HtmlAnchorElement>()
    {
        anchor.set_href(&url);
        anchor.set_download(name);
        anchor.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}

/// Scroll the element with `id` into view (a button, so the URL keeps the configuration).
pub fn scroll_to(id: &str) {
    if let Some(element) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
    {
        element.scroll_into_view();
    }
}

/// Open the card with `id` (a `<details>`) and scroll it into view.
pub fn open_card(id: &str) {
    if let Some(element) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
    {
        let _ = element.set_attribute("open", "");
        element.scroll_into_view();
    }
}

/// The browser's local storage, if the page may use it (reached by name: web-sys's `Storage`
/// feature would rebuild every crate that shares web-sys, wgpu among them).
fn local_storage() -> Option<wasm_bindgen::JsValue> {
    let window = web_sys::window()?;
    js_sys::Reflect::get(&window, &"localStorage".into())
        .ok()
        .filter(|s| !s.is_null() && !s.is_undefined())
}

fn call(
    storage: &wasm_bindgen::JsValue,
    method: &str,
    args: &js_sys::Array,
) -> Option<wasm_bindgen::JsValue> {
    let function = js_sys::Reflect::get(storage, &method.into())
        .ok()?
        .dyn_into::<js_sys::Function>()
        .ok()?;
    function.apply(storage, args).ok()
}

/// What this page stored under `key`, if anything.
pub fn stored(key: &str) -> Option<String> {
    let storage = local_storage()?;
    call(&storage, "getItem", &js_sys::Array::of1(&key.into()))?.as_string()
}

/// Remember `value` under `key` across visits; quietly nothing where storage is refused.
pub fn store(key: &str, value: &str) {
    if let Some(storage) = local_storage() {
        let _ = call(
            &storage,
            "setItem",
            &js_sys::Array::of2(&key.into(), &value.into()),
        );
    }
}

/// This wasm instance's memory now (it only grows): the page's, or a planning worker's.
pub fn wasm_bytes() -> f64 {
    use wasm_bindgen::JsCast;
    wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .map(|memory| {
            memory
                .buffer()
                .dyn_into::<js_sys::ArrayBuffer>()
                .map_or(0.0, |b| b.byte_length() as f64)
        })
        .unwrap_or(0.0)
}
