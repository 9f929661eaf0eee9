//! How senior a role is, read from its title ("Junior Frontend Developer", "Staff
//! Engineer", "Director of Engineering"), to tell a candidate's level from a job's.

use serde::{Deserialize, Serialize};

/// A role's level, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Seniority {
    /// An internship or apprenticeship.
    Intern,
    /// Junior, graduate, entry level.
    Junior,
    /// No level named: mid level.
    Mid,
    /// Senior.
    Senior,
    /// Staff, principal, lead.
    Staff,
    /// A manager of engineers.
    Manager,
    /// Head of, director, VP, chief.
    Director,
}

impl Seniority {
    /// The level a title names (`Mid` when it names none).
    ///
    /// ```
    /// use job_capabilities::ranking::Seniority;
    /// assert_eq!(Seniority::of_title("Junior Frontend Developer"), Seniority::Junior);
    /// assert_eq!(Seniority::of_title("Sr. Backend Engineer"), Seniority::Senior);
    /// assert_eq!(Seniority::of_title("Backend Engineer"), Seniority::Mid);
    /// assert_eq!(Seniority::of_title("Director of Platform Engineering"), Seniority::Director);
    /// ```
    pub fn of_title(title: &str) -> Seniority {
        Seniority::stated_in(title).unwrap_or(Seniority::Mid)
    }

    /// The level a title states, if it states one: "Data Scientist" states none (a
    /// posting often leaves the level to the interview), "Engineer II" and "Mid-level
    /// Engineer" state `Mid`.
    ///
    /// ```
    /// use job_capabilities::ranking::Seniority;
    /// assert_eq!(Seniority::stated_in("Data Scientist"), None);
    /// assert_eq!(Seniority::stated_in("Site Reliability Engineer II"), Some(Seniority::Mid));
    /// assert_eq!(Seniority::stated_in("Frontend Developer I"), Some(Seniority::Junior));
    /// assert_eq!(Seniority::stated_in("Staff Engineer"), Some(Seniority::Staff));
    /// ```
    pub fn stated_in(title: &str) -> Option<Seniority> {
        let words: Vec<String> = title
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let has = |names: &[&str]| words.iter().any(|w| names.contains(&w.as_str()));
        let lowered = title.to_lowercase();
        if has(&[
            "intern",
            "internship",
            "apprentice",
            "apprenticeship",
            "trainee",
            "werkstudent",
        ]) {
            Some(Seniority::Intern)
        } else if has(&["director", "vp", "chief", "cto", "cio"])
            || lowered.contains("head of")
            || lowered.contains("vice president")
        {
            Some(Seniority::Director)
        } else if has(&["manager"])
            && !lowered.contains("product manager")
            && !lowered.contains("project manager")
        {
            Some(Seniority::Manager)
        } else if has(&["staff", "principal", "lead", "architect", "distinguished"]) {
            Some(Seniority::Staff)
        } else if has(&["senior", "sr", "iii"]) {
            Some(Seniority::Senior)
        } else if has(&["junior", "jr", "graduate", "entry", "associate", "i"]) {
            Some(Seniority::Junior)
        } else if has(&["mid", "intermediate", "ii"]) {
            Some(Seniority::Mid)
        } else {
            None
        }
    }

    /// Steps between two levels (a manager counts one above staff).
    pub fn distance(self, other: Seniority) -> u8 {
        (self as u8).abs_diff(other as u8)
    }
}
