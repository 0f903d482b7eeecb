//! Two plans of one config held to each other: the page's (made in the browser's wasm) against
//! the native one made on the adapter the page modelled. Every high-water figure (in use and
//! reserved, by phase and by category), the parameters, the budget's answer and the planned
//! suggestions must be equal to the byte; the wall time may differ.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;

use super::{Checked, Plan};
use crate::engine::memory::Categories;
use crate::engine::phase::Phase;

/// Every figure in which `page` and `native` differ, each named with both values; empty when
/// they agree.
pub fn differences(page: &Plan, native: &Plan) -> Vec<String> {
    let mut found = Found::default();
    found.same("modelled adapter", &page.modelled, &native.modelled);
    found.same("params", &page.params, &native.params);
    found.same(
        "trainable_params",
        &page.trainable_params,
        &native.trainable_params,
    );
    found.same(
        "adapter_params",
        &page.adapter_params,
        &native.adapter_params,
    );
    found.same("weight_bytes", &page.weight_bytes, &native.weight_bytes);
    found.same(
        "high_water_in_use_bytes",
        &page.high_water_in_use_bytes,
        &native.high_water_in_use_bytes,
    );
    found.same(
        "high_water_reserved_bytes",
        &page.high_water_reserved_bytes,
        &native.high_water_reserved_bytes,
    );
    found.by_phase(
        "high_water_in_use_by_phase",
        &page.high_water_in_use_by_phase,
        &native.high_water_in_use_by_phase,
    );
    found.by_category(
        "high_water_by_category",
        page.high_water_by_category,
        native.high_water_by_category,
    );
    found.by_category("category_sizes", page.category_sizes, native.category_sizes);
    found.same("budget_bytes", &page.budget_bytes, &native.budget_bytes);
    found.same("fits", &page.fits, &native.fits);
    let stop = |plan: &Plan| {
        let oom = plan.out_of_memory.as_ref()?;
        Some((oom.step, oom.phase, oom.asked_bytes, oom.in_use_bytes))
    };
    found.same("out_of_memory", &stop(page), &stop(native));
    found.same("suggestions", &checked(page), &checked(native));
    found.same("kept_by_op", &page.kept_by_op, &native.kept_by_op);
    found.0
}

/// The check points' readings of reserved bytes (`reserved_by_phase`) where they differ: not a
/// high-water figure (the pools' high-water of reserved bytes is held in [`differences`]), and
/// reported rather than failed. TinyLlama-1.1B with LoRA is the case seen: its backward,
/// optimizer and evaluation check points read 263 MB more reserved in the page than natively,
/// every high-water figure equal (not yet explained).
pub fn check_points_apart(page: &Plan, native: &Plan) -> Vec<String> {
    let mut found = Found::default();
    found.by_phase(
        "reserved_by_phase",
        &page.reserved_by_phase,
        &native.reserved_by_phase,
    );
    found.0
}

#[derive(Default)]
struct Found(Vec<String>);

impl Found {
    fn same<T: Debug + PartialEq>(&mut self, what: &str, page: &T, native: &T) {
        if page != native {
            self.0
                .push(format!("{what}: page {page:?}, native {native:?}"));
        }
    }
    fn by_phase(&mut self, what: &str, page: &BTreeMap<Phase, u64>, native: &BTreeMap<Phase, u64>) {
        let phases: BTreeSet<&Phase> = page.keys().chain(native.keys()).collect();
        for phase in phases {
            let (a, b) = (page.get(phase), native.get(phase));
            if a != b {
                self.0
                    .push(format!("{what}.{}: page {a:?}, native {b:?}", phase.name()));
            }
        }
    }

    fn by_category(&mut self, what: &str, page: Option<Categories>, native: Option<Categories>) {
        let (Some(a), Some(b)) = (page, native) else {
            self.same(what, &page, &native);
            return;
        };
        for ((name, x), y) in Categories::NAMES.iter().zip(a.values()).zip(b.values()) {
            if x != y {
                self.0.push(format!("{what}.{name}: page {x}, native {y}"));
            }
        }
    }
}

fn checked(plan: &Plan) -> Vec<(Vec<String>, Option<bool>, Option<u64>)> {
    plan.suggestions
        .iter()
        .map(|s| {
            let in_use = match &s.checked {
                Checked::Fits {
                    high_water_in_use_bytes,
                    ..
                } => Some(*high_water_in_use_bytes),
                _ => None,
            };
            (s.suggestion.assignments(), s.checked.fits(), in_use)
        })
        .collect()
}
