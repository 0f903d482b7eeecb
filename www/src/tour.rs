//! A first run, guided one line at a time: press Start, watch the bytes in use, switch on
//! gradient accumulation, compare with the pinned run. Each line moves on when the visitor has
//! done what it asks (or on "next"); closing it, or finishing, is remembered in local storage,
//! so the tour shows once.

use leptos::prelude::*;
use vramlab::engine::RunConfig;

use crate::browser::{store, stored};
use crate::session::{Live, Status};

/// The local-storage key that remembers the tour as done.
const DONE_KEY: &str = "vramlab-tour";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Start,
    Watch,
    Accumulate,
    Compare,
}

impl Stop {
    const ALL: [Stop; 4] = [Self::Start, Self::Watch, Self::Accumulate, Self::Compare];

    fn text(self) -> &'static str {
        match self {
            Self::Start => {
                "Press Start: the model trains on this browser's GPU, and the memory chart fills \
                 step by step."
            }
            Self::Watch => {
                "Watch \u{201c}in use\u{201d} (blue): each step's high-water mark of the bytes the \
                 allocator held. The green line is the analytic model's estimate."
            }
            Self::Accumulate => {
                "Press Pin for A/B, set gradient accumulation to 4 (Strategies, Activations) and \
                 press Start again."
            }
            Self::Compare => {
                "Compare with the pinned run: it is the dashed grey line, and the A/B table under \
                 the charts names the category that moved most."
            }
        }
    }

    /// The name the page's CSS highlights the stop's target by.
    pub fn name(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Watch => "watch",
            Self::Accumulate => "accumulate",
            Self::Compare => "compare",
        }
    }

    fn number(self) -> usize {
        Self::ALL.iter().position(|s| *s == self).unwrap_or(0) + 1
    }

    fn next(self) -> Option<Self> {
        Self::ALL.get(self.number()).copied()
    }
}

/// Where the tour stands: `None` once done or closed.
#[derive(Clone, Copy)]
pub struct Tour(pub RwSignal<Option<Stop>>);

impl Tour {
    /// At its first stop, unless this browser finished or closed it before.
    pub fn new() -> Self {
        let done = stored(DONE_KEY).as_deref() == Some("done");
        Self(RwSignal::new((!done).then_some(Stop::Start)))
    }

    fn finish(self) {
        self.0.set(None);
        store(DONE_KEY, "done");
    }

    fn advance(self) {
        match self.0.get_untracked().and_then(Stop::next) {
            Some(next) => self.0.set(Some(next)),
            None => self.finish(),
        }
    }
}

#[component]
pub fn TourLine(tour: Tour, live: Live, config: RwSignal<RunConfig>) -> impl IntoView {
    // Each stop moves on once the visitor has done what it asks.
    Effect::new(move |_| {
        let status = live.status.get();
        let pinned = live.pinned.with(Option::is_some);
        let accumulating = config.with(|c| c.strategies.grad_accumulation > 1);
        let moves_on = match tour.0.get_untracked() {
            Some(Stop::Start) => status.busy(),
            Some(Stop::Watch) => status == Status::Finished,
            Some(Stop::Accumulate) => status.busy() && pinned && accumulating,
            _ => false,
        };
        if moves_on {
            tour.advance();
        }
    });
    move || {
        tour.0.get().map(|stop| {
            let last = stop.next().is_none();
            view! {
                <p class="tour" id="tour" data-stop=stop.name()>
                    <span class="tour-count">{format!("{} of {}", stop.number(), Stop::ALL.len())}</span>
                    <span class="tour-text">{stop.text()}</span>
                    <button id="tour-next" on:click=move |_| tour.advance()>
                        {if last { "done" } else { "next" }}
                    </button>
                    <button id="tour-close" title="close the tour; it will not show again"
                        on:click=move |_| tour.finish()>"\u{d7}"</button>
                </p>
            }
        })
    }
}
