//! The palette. With colour off (`NO_COLOR`), emphasis still marks what matters: findings keep
//! their symbol and are bold or reversed, so nothing depends on colour alone.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders};

use crate::rules::Severity;

#[derive(Debug, Clone, Copy)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }
    #[must_use]
    pub fn title(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    #[must_use]
    pub fn dim(&self) -> Style {
        self.fg(Color::DarkGray).add_modifier(Modifier::DIM)
    }
    #[must_use]
    pub fn label(&self) -> Style {
        self.fg(Color::Gray)
    }
    #[must_use]
    pub fn focus_border(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    #[must_use]
    pub fn border(&self) -> Style {
        self.fg(Color::DarkGray)
    }
    #[must_use]
    pub fn selected(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }
    #[must_use]
    pub fn util(&self) -> Style {
        self.fg(Color::Green)
    }
    #[must_use]
    pub fn power(&self) -> Style {
        self.fg(Color::Yellow)
    }
    #[must_use]
    pub fn sm(&self) -> Style {
        self.fg(Color::Magenta)
    }
    #[must_use]
    pub fn mem(&self) -> Style {
        self.fg(Color::LightBlue)
    }
    /// A bordered pane with its title; the border is highlighted when the pane has the focus.
    #[must_use]
    pub fn pane<'a>(
        &self,
        title: impl Into<std::borrow::Cow<'a, str>>,
        focused: bool,
    ) -> super::border::Border<'a> {
        super::border::Border::new(
            Span::styled(title.into(), self.title()),
            self.pane_border_style(focused),
        )
    }

    /// The same pane as a `Block`, for a `Paragraph` to draw itself in.
    #[must_use]
    pub fn block<'a>(
        &self,
        title: impl Into<std::borrow::Cow<'a, str>>,
        focused: bool,
    ) -> Block<'a> {
        Block::default()
            .borders(Borders::ALL)
            .title(Span::styled(title.into(), self.title()))
            .border_style(self.pane_border_style(focused))
    }

    fn pane_border_style(&self, focused: bool) -> Style {
        if focused {
            self.focus_border()
        } else {
            self.border()
        }
    }

    /// A finding's badge: coloured, and bold (warning) or reversed (critical) without colour.
    #[must_use]
    pub fn severity(&self, s: Severity) -> Style {
        let base = match s {
            Severity::Critical => self.fg(Color::Red).add_modifier(Modifier::BOLD),
            Severity::Warning => self.fg(Color::Yellow).add_modifier(Modifier::BOLD),
            Severity::Info => self.fg(Color::Cyan),
        };
        if !self.color && s == Severity::Critical {
            base.add_modifier(Modifier::REVERSED)
        } else {
            base
        }
    }
    /// A dark background behind a finding's span on the chart; none without colour.
    #[must_use]
    pub fn tint(&self, s: Severity) -> Option<Color> {
        match (self.color, s) {
            (false, _) | (true, Severity::Info) => None,
            (true, Severity::Critical) => Some(Color::Indexed(52)),
            (true, Severity::Warning) => Some(Color::Indexed(58)),
        }
    }

    /// Colour of a bar by how full it is.
    #[must_use]
    pub fn level(&self, pct: f32) -> Style {
        match pct {
            p if p >= 90.0 => self.fg(Color::Red),
            p if p >= 60.0 => self.fg(Color::Yellow),
            _ => self.fg(Color::Green),
        }
    }
}
