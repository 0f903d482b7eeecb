//! `--hf-config org/name`: config.json fetched from a Hub (here a server on the loopback serving
//! the fixtures), the token sent as a bearer token, the copy cached and read back without the
//! network, and a clear error naming the id when the Hub cannot answer.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use super::support::InRepo;

const DIR: InRepo = InRepo("tests/data/hf");

/// What the server was asked: each request's path and `Authorization` header.
type Asked = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A Hub on the loopback: `/openai-community/gpt2/resolve/main/config.json` is the GPT-2
/// fixture, anything else a 404. Its address, and what it was asked.
fn hub() -> (String, Asked) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let asked: Asked = Arc::default();
    let log = asked.clone();
    let gpt2 = std::fs::read_to_string(format!("{DIR}/gpt2.json")).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let mut auth = None;
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap() == 0 || header.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = header.split_once(':')
                    && name.eq_ignore_ascii_case("authorization")
                {
                    auth = Some(value.trim().to_string());
                }
            }
            let (status, body) = match path.as_str() {
                "/openai-community/gpt2/resolve/main/config.json" => ("200 OK", gpt2.as_str()),
                _ => ("404 Not Found", "Entry not found"),
            };
            log.lock().unwrap().push((path, auth));
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (address, asked)
}

/// An address nothing listens on: a port the system gave out and took back.
fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    address
}

/// `vramlab plan --hf-config ID` (GPT-2 small on sort-gpt's tiny batch) with the Hub at
/// `endpoint`, the cache in `cache`, and `token` as HF_TOKEN; no proxy in the way.
fn plan(id: &str, endpoint: &str, cache: &std::path::Path, token: Option<&str>) -> Output {
    plan_with(&[], id, endpoint, cache, token)
}

/// [`plan`] with `extra` arguments.
fn plan_with(
    extra: &[&str],
    id: &str,
    endpoint: &str,
    cache: &std::path::Path,
    token: Option<&str>,
) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vramlab"));
    command
        .args(["plan", "--hf-config", id, "--preset", "sort-gpt"])
        .args(extra)
        .args([
            "--set",
            "batch_size=1",
            "--set",
            "eval_batch_size=1",
            "--json",
        ])
        .env("HF_ENDPOINT", endpoint)
        .env("XDG_CACHE_HOME", cache)
        .env_remove("HF_HUB_OFFLINE");
    for proxy in [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "all_proxy",
    ] {
        command.env_remove(proxy);
    }
    match token {
        Some(token) => command.env("HF_TOKEN", token),
        None => command.env_remove("HF_TOKEN"),
    };
    command.output().expect("the binary runs")
}

fn refused(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    String::from_utf8(out.stderr.clone()).unwrap()
}

#[test]
fn a_hub_id_is_fetched_with_its_token_cached_and_refused_clearly_offline() {
    let cache = std::env::temp_dir().join(format!("vramlab-hub-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let (endpoint, asked) = hub();
    let id = "openai-community/gpt2";

    // Fetched from the Hub, with the token as a bearer token.
    let out = plan(id, &endpoint, &cache, Some("hf_secret"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["params"], 124_439_808);
    assert_eq!(report["name"], "gpt2");
    assert_eq!(
        *asked.lock().unwrap(),
        vec![(
            "/openai-community/gpt2/resolve/main/config.json".to_string(),
            Some("Bearer hf_secret".to_string())
        )]
    );
    let cached = cache.join("vramlab/hf/openai-community/gpt2/config.json");
    assert_eq!(
        std::fs::read_to_string(&cached).unwrap(),
        std::fs::read_to_string(format!("{DIR}/gpt2.json")).unwrap()
    );

    // The cached copy is read without the network (nothing listens at the endpoint now), and
    // the run says so.
    let out = plan(id, &closed_port(), &cache, None);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(asked.lock().unwrap().len(), 1);
    assert!(
        said.contains("openai-community/gpt2: config.json read from the cache (")
            && said.contains("saved today), not the Hub; --refresh fetches it again"),
        "{said}"
    );

    // --refresh asks the Hub again, and says nothing of a cache.
    let out = plan_with(&["--refresh"], id, &endpoint, &cache, None);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !said.contains("cache"), "{said}");
    assert_eq!(asked.lock().unwrap().len(), 2);
    // A file has nothing to refresh.
    let err = refused(&plan_with(
        &["--refresh"],
        &format!("{DIR}/gpt2.json"),
        &endpoint,
        &cache,
        None,
    ));
    assert!(
        err.contains("--refresh") && err.contains("is a file, not a Hub id"),
        "{err}"
    );

    // Offline, an id not cached: the error names it and says to pass a file.
    let err = refused(&plan(
        "openai-community/gpt2-xl",
        &closed_port(),
        &cache,
        None,
    ));
    assert!(
        err.contains("--hf-config: openai-community/gpt2-xl: could not reach")
            && err.contains("pass its path"),
        "{err}"
    );

    // An HTTP error, and no token sent when none is set; nothing cached.
    let err = refused(&plan("nobody/nothing", &endpoint, &cache, None));
    assert!(
        err.contains("--hf-config: nobody/nothing:") && err.contains("HTTP 404"),
        "{err}"
    );
    assert_eq!(
        asked.lock().unwrap().last().unwrap(),
        &("/nobody/nothing/resolve/main/config.json".to_string(), None)
    );
    assert!(!cache.join("vramlab/hf/nobody").exists());

    // A missing file is still a missing file, not a Hub id.
    let err = refused(&plan("nowhere/config.json", &endpoint, &cache, None));
    assert!(
        err.contains("--hf-config: nowhere/config.json: No such file"),
        "{err}"
    );
    std::fs::remove_dir_all(&cache).unwrap();
}
