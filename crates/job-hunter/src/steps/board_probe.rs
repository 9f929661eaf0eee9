//! Finding a company's job board without web search: the names a company's board
//! usually goes by ([`board_tokens`]) tried on each of the four vendors, every answer
//! recorded. A board that refuses or fails does not end the search; the next name or
//! vendor is tried.

use job_capabilities::RawJob;
use job_capabilities::ats::{AtsBoard, AtsError, AtsKind, JobBoardClient, WorkdaySite};

use crate::grounding::{name_words, words};
use crate::models::{BoardProbe, CompanyOutcome};

/// The vendors tried, in order.
pub const PROBED_VENDORS: [AtsKind; 4] = [
    AtsKind::Greenhouse,
    AtsKind::Lever,
    AtsKind::Ashby,
    AtsKind::Workday,
];

/// The Workday site name most career sites use; a probe can only guess it.
pub const WORKDAY_SITE: &str = "External";

/// The board names a company may use: its name run together (`quilllabs`), its name's
/// words joined by hyphens (`quill-labs`), the same without a legal form or a leading
/// `the` (`acme` for "The Acme Company GmbH"), and the first label of its domain.
///
/// ```
/// use job_hunter::steps::board_probe::board_tokens;
/// assert_eq!(
///     board_tokens("Quill Labs", Some("https://www.quill.example/")),
///     ["quilllabs", "quill-labs", "quill"]
/// );
/// assert_eq!(board_tokens("Acme Robotics GmbH", None), ["acmerobotics", "acme-robotics", "acmeroboticsgmbh", "acme-robotics-gmbh"]);
/// ```
pub fn board_tokens(name: &str, domain: Option<&str>) -> Vec<String> {
    let (bare, full) = (name_words(name), words(name));
    let mut tokens = vec![bare.concat(), bare.join("-"), full.concat(), full.join("-")];
    if let Some(domain) = domain {
        let host = domain.trim().to_lowercase();
        let host = host.split("://").last().unwrap_or_default();
        let host = host.strip_prefix("www.").unwrap_or(host);
        if let Some(label) = host.split(['.', '/']).next() {
            tokens.push(label.to_owned());
        }
    }
    let mut unique: Vec<String> = Vec::new();
    for token in tokens {
        if !token.is_empty() && !unique.contains(&token) {
            unique.push(token);
        }
    }
    unique
}

/// The board of `kind` named `token` (a Workday board at the usual host and site).
pub fn guessed_board(kind: AtsKind, token: &str) -> AtsBoard {
    AtsBoard {
        kind,
        token: token.to_owned(),
        workday: (kind == AtsKind::Workday).then(|| WorkdaySite {
            host: format!("{token}.wd5.myworkdayjobs.com"),
            tenant: token.to_owned(),
            site: WORKDAY_SITE.to_owned(),
            locale: None,
        }),
    }
}

/// What probing a company's boards came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Probed {
    /// The first board found, with its jobs.
    pub found: Option<(AtsBoard, Vec<RawJob>)>,
    /// Every board tried and what it answered, in order.
    pub probes: Vec<BoardProbe>,
}

impl Probed {
    /// The company's outcome: its jobs when a board was found; else blocked or an error
    /// when a board refused or failed (every such answer named), else no board.
    pub fn outcome(&self) -> CompanyOutcome {
        if let Some((board, jobs)) = &self.found {
            return CompanyOutcome::JobsFetched {
                count: jobs.len(),
                source: board.kind.source(),
            };
        }
        let answered = |prefix: &str| -> Vec<String> {
            self.probes
                .iter()
                .filter(|p| p.outcome.starts_with(prefix))
                .map(|p| format!("{} {}", p.board, p.outcome))
                .collect()
        };
        let (blocked, failed) = (answered("blocked"), answered("error"));
        if !blocked.is_empty() && failed.is_empty() {
            CompanyOutcome::Blocked {
                reason: blocked.join("; "),
            }
        } else if !blocked.is_empty() || !failed.is_empty() {
            CompanyOutcome::Error {
                reason: [blocked, failed].concat().join("; "),
            }
        } else {
            CompanyOutcome::NoCareersPage
        }
    }
}

/// Tries every name of [`board_tokens`] on every vendor of [`PROBED_VENDORS`] until a
/// board answers with its jobs; records every answer.
pub async fn probe(boards: &dyn JobBoardClient, company: &str, domain: Option<&str>) -> Probed {
    let mut probes = Vec::new();
    for token in board_tokens(company, domain) {
        for kind in PROBED_VENDORS {
            let board = guessed_board(kind, &token);
            let name = format!("{kind}/{token}");
            match boards.fetch_jobs(&board, company).await {
                Ok(jobs) => {
                    probes.push(BoardProbe {
                        board: name,
                        outcome: format!("{} jobs", jobs.len()),
                    });
                    return Probed {
                        found: Some((board, jobs)),
                        probes,
                    };
                }
                Err(AtsError::BoardNotFound { .. }) => probes.push(BoardProbe {
                    board: name,
                    outcome: "no such board".into(),
                }),
                Err(error) => {
                    let class = if error.is_blocked() {
                        "blocked"
                    } else {
                        "error"
                    };
                    tracing::info!(board = %name, %error, "a guessed job board failed: trying the next");
                    probes.push(BoardProbe {
                        board: name,
                        outcome: format!("{class}: {error}"),
                    });
                }
            }
        }
    }
    Probed {
        found: None,
        probes,
    }
}
