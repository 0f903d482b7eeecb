//! The loopback server of `train --live`: the built page (as `www/serve.mjs` serves it: a
//! file's .br or .gz sibling when the browser accepts it), the run's events as server-sent
//! events, and the page's controls. One thread takes requests; each gets a thread of its own,
//! so an open event stream holds nothing else up.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tiny_http::{Header, Method, Request, Response, Server};
use vramlab::engine::ConfigError;
use vramlab::engine::train::live::{CONTROL_PATH, Control, EVENTS_PATH};

use super::hub::{Cursor, Hub};

/// How long a stream waits with nothing to send before a keep-alive comment: writing is how a
/// closed tab is noticed.
const KEEP_ALIVE: Duration = Duration::from_secs(10);
/// A control is one word; anything longer is refused unread.
const CONTROL_BYTES: u64 = 64;

/// Listen on the loopback at `port` (0: a free one) and serve `page` and `hub` from a thread of
/// its own; returns the address listened on.
pub fn start(port: u16, page: PathBuf, hub: Arc<Hub>) -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).map_err(|err| {
        ConfigError::invalid(
            "--port",
            format!("could not listen on 127.0.0.1:{port} ({err}): pass another port, or 0 for a free one"),
        )
    })?;
    let address = listener.local_addr()?;
    let server = Server::from_listener(listener, None)
        .map_err(|err| anyhow::anyhow!("--port {port}: {err}"))?;
    let page: Arc<Path> = page.into();
    std::thread::Builder::new()
        .name("live-server".into())
        .spawn(move || {
            for request in server.incoming_requests() {
                let (page, hub) = (page.clone(), hub.clone());
                // A request that fails midway (a closed tab) has nothing left to answer.
                let _ = std::thread::Builder::new()
                    .name("live-request".into())
                    .spawn(move || answer(request, &page, &hub));
            }
        })?;
    Ok(address)
}

fn answer(mut request: Request, page: &Path, hub: &Hub) {
    let path = request
        .url()
        .split(['?', '#'])
        .next()
        .unwrap_or("/")
        .to_string();
    let method = request.method().clone();
    let _ = match (method, path.as_str()) {
        (Method::Get, EVENTS_PATH) => stream(request, hub),
        (Method::Post, CONTROL_PATH) => {
            let mut body = String::new();
            let read = request
                .as_reader()
                .take(CONTROL_BYTES)
                .read_to_string(&mut body);
            match read
                .map_err(|err| err.to_string())
                .and_then(|_| Control::parse(&body))
            {
                Ok(control) => {
                    hub.control(control);
                    request.respond(Response::empty(204))
                }
                Err(err) => request.respond(Response::from_string(err).with_status_code(400)),
            }
        }
        (Method::Get | Method::Head, _) => serve_file(request, page, &path),
        _ => request.respond(Response::empty(405)),
    };
}

/// The run's events from the first, then as they come, until the run's last one.
fn stream(request: Request, hub: &Hub) -> std::io::Result<()> {
    let mut writer = request.into_writer();
    writer.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
          Connection: close\r\n\r\n",
    )?;
    writer.flush()?;
    hub.opened();
    let sent = send_until_ended(&mut *writer, hub);
    hub.closed();
    sent
}

/// The run's events from the first, then as they come, written to `writer` (a tab's stream, or
/// a relayed run's standard error) until the run's last one.
pub(super) fn send_until_ended(writer: &mut dyn Write, hub: &Hub) -> std::io::Result<()> {
    let mut cursor = Cursor::default();
    loop {
        let news = hub.news(cursor, KEEP_ALIVE);
        if news.frames.is_empty() && !news.ended {
            writer.write_all(b": keep-alive\n\n")?;
        }
        for frame in &news.frames {
            writer.write_all(frame.as_bytes())?;
        }
        writer.flush()?;
        cursor = news.cursor;
        if news.ended {
            return Ok(());
        }
    }
}

fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    }
}

/// `url_path` under `page`, or `None` when it would leave it.
fn file_under(page: &Path, url_path: &str) -> Option<PathBuf> {
    let relative = url_path.trim_start_matches('/');
    let relative = if relative.is_empty() {
        "index.html"
    } else {
        relative
    };
    let relative = Path::new(relative);
    relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| page.join(relative))
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name, value).expect("ASCII header")
}

fn serve_file(request: Request, page: &Path, url_path: &str) -> std::io::Result<()> {
    let Some(file) = file_under(page, url_path).filter(|f| f.is_file()) else {
        return request.respond(Response::empty(404));
    };
    let accepts = |coding: &str| {
        request
            .headers()
            .iter()
            .filter(|h| h.field.equiv("Accept-Encoding"))
            .any(|h| {
                h.value
                    .as_str()
                    .split(',')
                    .any(|part| part.trim().starts_with(coding))
            })
    };
    let mut body = file.clone();
    let mut encoding = None;
    for (coding, suffix) in [("br", "br"), ("gzip", "gz")] {
        let sibling = file.with_extension(match file.extension() {
            Some(e) => format!("{}.{suffix}", e.to_string_lossy()),
            None => suffix.to_string(),
        });
        if accepts(coding) && sibling.is_file() {
            body = sibling;
            encoding = Some(coding);
            break;
        }
    }
    let opened = std::fs::File::open(&body)?;
    let mut response = Response::from_file(opened)
        .with_header(header("Content-Type", content_type(&file)))
        .with_header(header("Cache-Control", "no-cache"))
        .with_header(header("Vary", "Accept-Encoding"));
    if let Some(coding) = encoding {
        response.add_header(header("Content-Encoding", coding));
    }
    request.respond(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_inside_the_page_are_served() {
        let page = Path::new("/srv/page");
        assert_eq!(file_under(page, "/"), Some(page.join("index.html")));
        assert_eq!(
            file_under(page, "/vramlab-web.js"),
            Some(page.join("vramlab-web.js"))
        );
        assert_eq!(file_under(page, "/../etc/passwd"), None);
        assert_eq!(file_under(page, "/a/../../b"), None);
    }
}
