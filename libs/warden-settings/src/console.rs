//! The operator console (`console`, docs/console.md): where it listens, whether its session
//! cookie is marked Secure, and whether agents' campaigns wait for an operator's approval.

use std::net::SocketAddr;

use crate::source::Source;

/// The console's variables and what each means.
pub const CONSOLE_VARIABLES: &[(&str, &str)] = &[
    (
        "CONSOLE_HTTP_ADDR",
        "address the operator console listens on (default 127.0.0.1:8090)",
    ),
    (
        "CONSOLE_SECURE_COOKIES",
        "`true` marks the console's session cookie Secure (set it when the console is served over TLS); default `false`",
    ),
    (
        "CAMPAIGN_APPROVAL",
        "`off` (default) or `required`: a campaign an agent schedules waits in `pending_approval` until an operator approves it in the console",
    ),
];

/// Whether agents' campaigns wait for an operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CampaignApproval {
    #[default]
    Off,
    Required,
}

impl CampaignApproval {
    pub fn as_str(self) -> &'static str {
        match self {
            CampaignApproval::Off => "off",
            CampaignApproval::Required => "required",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Console {
    pub addr: SocketAddr,
    pub secure_cookies: bool,
    pub campaign_approval: CampaignApproval,
}

impl Default for Console {
    fn default() -> Self {
        Console {
            addr: SocketAddr::from(([127, 0, 0, 1], 8090)),
            secure_cookies: false,
            campaign_approval: CampaignApproval::Off,
        }
    }
}

impl Console {
    pub(crate) fn read(src: &mut Source<'_>) -> Console {
        let d = Console::default();
        let addr = match src.trimmed("CONSOLE_HTTP_ADDR") {
            None => d.addr,
            Some(raw) => raw.parse::<SocketAddr>().unwrap_or_else(|_| {
                src.problem(
                    "CONSOLE_HTTP_ADDR",
                    format!("`{raw}` is not an address; use ip:port, e.g. 127.0.0.1:8090"),
                );
                d.addr
            }),
        };
        let secure_cookies = match src
            .trimmed("CONSOLE_SECURE_COOKIES")
            .map(|s| s.to_ascii_lowercase())
            .as_deref()
        {
            None | Some("false") | Some("0") | Some("no") => false,
            Some("true") | Some("1") | Some("yes") => true,
            Some(other) => {
                src.problem(
                    "CONSOLE_SECURE_COOKIES",
                    format!("`{other}` is not a flag; use `true` or `false`"),
                );
                false
            }
        };
        let campaign_approval = match src
            .trimmed("CAMPAIGN_APPROVAL")
            .map(|s| s.to_ascii_lowercase())
            .as_deref()
        {
            None | Some("off") => CampaignApproval::Off,
            Some("required") => CampaignApproval::Required,
            Some(other) => {
                src.problem(
                    "CAMPAIGN_APPROVAL",
                    format!("`{other}` is not supported; use `off` or `required`"),
                );
                CampaignApproval::Off
            }
        };
        Console {
            addr,
            secure_cookies,
            campaign_approval,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::Settings;

    fn load(pairs: &[(&str, &str)]) -> Result<Settings, crate::SettingsError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_sources(None, &env)
    }

    #[test]
    fn defaults_and_values() {
        let s = load(&[]).unwrap();
        assert_eq!(s.console, Console::default());
        assert_eq!(s.console.addr.to_string(), "127.0.0.1:8090");
        let s = load(&[
            ("CONSOLE_HTTP_ADDR", "0.0.0.0:9000"),
            ("CONSOLE_SECURE_COOKIES", "true"),
            ("CAMPAIGN_APPROVAL", "required"),
        ])
        .unwrap();
        assert_eq!(s.console.addr.to_string(), "0.0.0.0:9000");
        assert!(s.console.secure_cookies);
        assert_eq!(s.console.campaign_approval, CampaignApproval::Required);
        let printed = s.print_config();
        assert!(
            printed.contains("console_http_addr = \"0.0.0.0:9000\""),
            "{printed}"
        );
        assert!(
            printed.contains("campaign_approval = \"required\""),
            "{printed}"
        );
    }

    #[test]
    fn bad_values_are_named() {
        let e = load(&[
            ("CONSOLE_HTTP_ADDR", "nowhere"),
            ("CONSOLE_SECURE_COOKIES", "maybe"),
            ("CAMPAIGN_APPROVAL", "sometimes"),
        ])
        .unwrap_err()
        .to_string();
        for v in [
            "CONSOLE_HTTP_ADDR",
            "CONSOLE_SECURE_COOKIES",
            "CAMPAIGN_APPROVAL",
        ] {
            assert!(e.contains(v), "{e}");
        }
    }
}
