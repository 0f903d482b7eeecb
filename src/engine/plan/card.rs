//! A plan's answer in a sentence and as an image: the verdict against the budget, and an SVG
//! card (the verdict, the training step's high-water mark stacked by what holds it, each phase
//! in use and reserved, what it was planned for) that the page exports. Made from the plan
//! alone, so whichever front draws it draws the same card.

use std::fmt::Write;

use crate::engine::config::{MixedPrecision, Offload, Sharding};
use crate::engine::format::{ByteFormat, grouped};
use crate::engine::memory::Categories;
use crate::engine::strategies::mixed_precision::in_effect;
use crate::engine::strategies::sharding::HOST_BYTES_A_TRAINED_VALUE;

use super::Plan;

/// The card's width in pixels.
const WIDTH: u32 = 720;
/// Each category's colour, in [`Categories::NAMES`] order (the page's stacked bar's).
const COLOURS: [&str; 6] = [
    "#4c72b0", "#dd8452", "#937860", "#55a868", "#c44e52", "#8c8c8c",
];

impl Plan {
    /// Fits or not, with the margin; without a budget, the high-water mark.
    pub fn verdict(&self) -> String {
        let gib = ByteFormat::MIB_OR_GIB;
        let budget = self.budget_bytes.unwrap_or(0);
        let (in_use, reserved) = (self.high_water_in_use_bytes, self.high_water_reserved_bytes);
        let peak = in_use.max(reserved);
        match self.fits {
            Some(true) => format!(
                "Fits: high-water {} in use, {} reserved, under {} ({} to spare).",
                gib.of(in_use),
                gib.of(reserved),
                gib.of(budget),
                gib.of(budget.saturating_sub(peak)),
            ),
            Some(false) => format!(
                "Does not fit: high-water {} in use, {} reserved, over {} by {}.",
                gib.of(in_use),
                gib.of(reserved),
                gib.of(budget),
                gib.of(peak.saturating_sub(budget)),
            ),
            None => format!("High-water {} in use.", gib.of(in_use)),
        }
    }

    /// What an offloading plan keeps on the host, in a line; `None` without offload.
    pub fn host_line(&self) -> Option<String> {
        let bytes = self.host_bytes?;
        let gib = ByteFormat::MIB_OR_GIB;
        let gpus = self.sharded.as_ref().map_or(1, |sharded| sharded.gpus) as u64;
        let node = match gpus {
            1 => String::new(),
            // A node holds eight GPUs at most (an HGX board): beyond that, a node's share.
            n => format!(
                "; {} on a node of {} GPUs",
                gib.of(bytes * n.min(8)),
                n.min(8)
            ),
        };
        let offload = self.config.strategies.offload;
        let what = match offload {
            Offload::Parameters => "this GPU's shards live there with their gradients and \
                 the optimizer state (FSDP2's CPUOffloadPolicy, whose optimizer steps on the \
                 host): each shard in its stored type and, where it trains, its gradient and \
                 AdamW's two moments in that type too; computed, not an allocator's figure"
                .to_string(),
            Offload::Optimizer => format!(
                "the optimizer steps there: an f32 copy of this GPU's trained shard, its f32 \
                 gradient and AdamW's two moments, {HOST_BYTES_A_TRAINED_VALUE} bytes a value \
                 as ZeRO-Offload lays them out; computed, not an allocator's figure"
            ),
            _ => "each checkpointed block's input waits there between forward and its \
                  recomputation; counted as tensors move, not an allocator's figure"
                .to_string(),
        };
        Some(format!(
            "Host memory: {} at most for this GPU's run{node} (offload = {}: {what}).",
            gib.of(bytes),
            offload.name(),
        ))
    }

    /// A sharded plan's scope, in a line: whose figures these are, the total across the GPUs
    /// and what each sends and receives; `None` for one GPU's whole run.
    pub fn per_gpu(&self) -> Option<String> {
        let sharded = self.sharded.as_ref()?;
        let gib = ByteFormat::MIB_OR_GIB;
        // Gathered and reduced in the weights' own type (f16 or f32; LoRA's factors are f32
        // over any base by default, `adapter_dtype`), or in f16 under mixed precision where
        // the adapter computes in it, which casts shards before their gather (data parallel
        // all-reduces its f32 gradients).
        let s = &self.config.strategies;
        let sharded_mixed = sharded.mode.shards_parameters()
            && in_effect(&self.config, &self.adapter) == MixedPrecision::F16;
        let traffic = match sharded_mixed {
            true => sharded.traffic_bytes(2, 2),
            false => sharded.traffic_bytes(s.weight_value_bytes(), s.trained_value_bytes()),
        };
        let total = gib.of(self.high_water_in_use_bytes * sharded.gpus as u64);
        // The shards cross to the GPU in their stored type (f32 under mixed precision).
        let host_traffic =
            sharded.offload_traffic_bytes(s.weight_value_bytes(), s.trained_value_bytes());
        match sharded.mode {
            Sharding::None => {
                return Some(format!(
                    "One GPU of {gpus}, data parallel (DDP's defaults: every GPU holds the \
                     whole run and a copy of its trained gradients in 25 MB buckets): every \
                     figure is one GPU's. Across the {gpus}: {total} in use at their \
                     high-water marks; each GPU sends and receives {traffic} a training pass \
                     (the gradients' all-reduce, computed for a ring, not measured).",
                    gpus = sharded.gpus,
                    traffic = gib.of(traffic),
                ));
            }
            Sharding::Optimizer => {
                return Some(format!(
                    "The GPU of {gpus} with the largest optimizer share, ZeRO-1 (DDP with \
                     PyTorch's ZeroRedundancyOptimizer: the whole model, its gradients and \
                     DDP's buckets on every GPU; the optimizer state of {share} of the \
                     {trained} trained values here): every figure is this GPU's. Across the \
                     {gpus}: at most {total} in use at their high-water marks; each GPU sends \
                     and receives about {traffic} a training pass (the gradients' all-reduce \
                     and the updated parameters' broadcasts, computed for a ring, not \
                     measured).",
                    gpus = sharded.gpus,
                    share = grouped(sharded.optimizer_values),
                    trained = grouped(sharded.trained_values),
                    traffic = gib.of(traffic),
                ));
            }
            Sharding::Gradients | Sharding::Full => {}
        }
        if sharded.gpus == 1 {
            return Some(format!(
                "One GPU, its parameters on the host ({mode} sharding over one GPU with \
                 FSDP2's CPUOffloadPolicy): each block is copied to the GPU and gathered before \
                 it runs, freed after; the GPU copies {traffic} from the host and back a \
                 training pass (computed, not measured).",
                mode = sharded.mode.name(),
                traffic = gib.of(host_traffic),
            ));
        }
        let host_copies = match s.offload {
            Offload::Parameters => format!(
                " Its parameters live on the host (FSDP2's CPUOffloadPolicy): it copies {} \
                 from the host and back a training pass (computed, not measured).",
                gib.of(host_traffic)
            ),
            _ => String::new(),
        };
        Some(format!(
            "One GPU's share of {gpus} ({mode} sharding, FSDP's {fsdp}): every figure is one \
             GPU's. Across the {gpus}: {total} in use at their high-water marks; each GPU sends \
             and receives {traffic} a training pass (computed for ring collectives, not \
             measured).{host_copies}",
            gpus = sharded.gpus,
            mode = sharded.mode.name(),
            fsdp = sharded.mode.fsdp_name(),
            traffic = gib.of(traffic),
        ))
    }

    /// Under a budget it does not fit: one line a sharding, the fewest GPUs that fit and what
    /// each GPU then holds, with the counts planned.
    pub fn fewest_gpus_lines(&self) -> Vec<String> {
        let gib = ByteFormat::MIB_OR_GIB;
        self.fewest_gpus
            .iter()
            .map(|fewest| {
                let planned: Vec<String> = fewest
                    .planned
                    .iter()
                    .map(|(gpus, fits)| {
                        format!("{gpus} {}", if *fits { "fits" } else { "does not" })
                    })
                    .collect();
                let answer = match (fewest.gpus, fewest.high_water_in_use_bytes) {
                    (Some(gpus), Some(bytes)) => {
                        format!("{gpus} GPUs, {} in use on each", gib.of(bytes))
                    }
                    _ if fewest.planned.is_empty() => format!(
                        "estimated not to fit on {} GPUs: what each GPU keeps whole passes the \
                         budget (not planned)",
                        crate::engine::config::limits::GPUS.1
                    ),
                    _ => "no count planned fits".to_string(),
                };
                let planned = match planned.is_empty() {
                    true => String::new(),
                    false => format!(" (planned: {})", planned.join(", ")),
                };
                format!(
                    "{} ({}): {answer}{planned}",
                    fewest.sharding.name(),
                    fewest.sharding.fsdp_name(),
                )
            })
            .collect()
    }

    /// The plan as an SVG card.
    pub fn svg(&self) -> String {
        let gib = ByteFormat::MIB_OR_GIB;
        let mut body = String::new();
        let mut y = 30;
        let line = |body: &mut String, y: &mut u32, size: u32, weight: &str, text: &str| {
            let _ = writeln!(
                body,
                r#"<text x="16" y="{y}" font-size="{size}" font-weight="{weight}">{}</text>"#,
                escaped(text)
            );
            *y += size + 10;
        };
        line(
            &mut body,
            &mut y,
            18,
            "bold",
            &format!("Will it fit? {}", self.name),
        );
        line(&mut body, &mut y, 15, "bold", &self.verdict());
        if let Some(sharded) = &self.sharded {
            line(
                &mut body,
                &mut y,
                13,
                "normal",
                &match sharded.mode {
                    Sharding::None => format!(
                        "one GPU of {}, data parallel: every figure is one GPU's",
                        sharded.gpus
                    ),
                    mode if sharded.gpus == 1 => format!(
                        "one GPU ({} sharding), its parameters on the host",
                        mode.name()
                    ),
                    mode => format!(
                        "one GPU's share of {} ({} sharding): every figure is one GPU's",
                        sharded.gpus,
                        mode.name()
                    ),
                },
            );
        }
        if let Some(host) = self.host_bytes {
            line(
                &mut body,
                &mut y,
                13,
                "normal",
                &format!(
                    "host memory: {} at most (offload = {})",
                    ByteFormat::MIB_OR_GIB.of(host),
                    self.config.strategies.offload.name()
                ),
            );
        }
        let planned_on = self
            .modelled
            .as_ref()
            .map_or(self.adapter.name.as_str(), |m| m.name.as_str());
        line(
            &mut body,
            &mut y,
            13,
            "normal",
            &format!(
                "{} parameters ({} trained), batch {}, {} tokens a sample",
                self.params,
                self.trainable_params,
                self.config.batch_size,
                self.config.data.seq_len
            ),
        );
        line(
            &mut body,
            &mut y,
            13,
            "normal",
            &format!("planned by cubecl's dry run, modelling {planned_on}"),
        );

        // The training step's high-water mark, stacked by what holds it.
        let categories = self.high_water_by_category.unwrap_or_default();
        let total = categories.values().iter().sum::<u64>().max(1);
        let (bar_width, mut x) = (f64::from(WIDTH - 32), 16.0);
        for ((name, bytes), colour) in Categories::NAMES
            .iter()
            .zip(categories.values())
            .zip(COLOURS)
        {
            if bytes == 0 {
                continue;
            }
            let width = bar_width * bytes as f64 / total as f64;
            let _ = writeln!(
                body,
                r#"<rect x="{x:.1}" y="{y}" width="{width:.1}" height="24" fill="{colour}"><title>{}</title></rect>"#,
                escaped(&format!("{name}: {}", gib.of(bytes)))
            );
            x += width;
        }
        y += 44;
        for ((name, bytes), colour) in Categories::NAMES
            .iter()
            .zip(categories.values())
            .zip(COLOURS)
            .filter(|((_, bytes), _)| *bytes > 0)
        {
            let _ = writeln!(
                body,
                r#"<rect x="16" y="{}" width="12" height="12" fill="{colour}"/>"#,
                y - 11
            );
            let _ = writeln!(
                body,
                r#"<text x="34" y="{y}" font-size="13">{}</text>"#,
                escaped(&format!("{name}: {}", gib.of(bytes)))
            );
            y += 20;
        }

        // Each phase, in use and reserved.
        y += 10;
        let _ = writeln!(
            body,
            r#"<text x="16" y="{y}" font-size="13" font-weight="bold">phase</text><text x="200" y="{y}" font-size="13" font-weight="bold" text-anchor="end">in use</text><text x="320" y="{y}" font-size="13" font-weight="bold" text-anchor="end">reserved</text>"#
        );
        for (phase, bytes) in &self.high_water_in_use_by_phase {
            y += 20;
            let reserved = self.reserved_by_phase.get(phase).copied().unwrap_or(0);
            let _ = writeln!(
                body,
                r#"<text x="16" y="{y}" font-size="13">{}</text><text x="200" y="{y}" font-size="13" text-anchor="end">{}</text><text x="320" y="{y}" font-size="13" text-anchor="end">{}</text>"#,
                phase.name(),
                gib.of(*bytes),
                gib.of(reserved)
            );
        }
        let height = y + 24;
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
             viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\">\n\
             <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n{body}</svg>\n"
        )
    }
}

/// `text` with XML's five special characters escaped and the characters XML 1.0 cannot hold
/// (most control characters) left out: a config's name is the user's text.
fn escaped(text: &str) -> String {
    let allowed = |c: &char| {
        matches!(c, '\t' | '\n' | '\r') || !(c.is_control() || matches!(c, '\u{FFFE}' | '\u{FFFF}'))
    };
    text.chars()
        .filter(allowed)
        .collect::<String>()
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

#[cfg(test)]
mod tests {
    use super::escaped;

    #[test]
    fn text_is_escaped_for_xml() {
        assert_eq!(
            escaped(r#"a<b & "c" 'd'>"#),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;"
        );
        assert_eq!(escaped("a\u{0}b\u{1b}c\u{FFFE}"), "abc");
    }
}
