//! Where a template's FLOW button is: send_template fills it with the flow token (and the
//! flow's first data) before the send path checks the template's components.

use warden_rules::template_spec::ButtonKind;

use crate::{Core, CoreError, templates};

/// The index of the FLOW button of template `name` in `locale` of the business of the
/// number `from` names: `Some(None)` when it has none, `None` when there is no such
/// template (the send path answers that).
pub async fn flow_button_index(
    core: &Core,
    from: Option<&str>,
    name: &str,
    locale: &str,
) -> Result<Option<Option<usize>>, CoreError> {
    let business = core.sender_keys(from)?.business;
    let mut conn = core.pg().get().await?;
    let Some(template) = templates::find(&mut conn, &business, name, locale).await? else {
        return Ok(None);
    };
    // Unreadable components are the send path's to report.
    let Ok(spec) = templates::spec_of(&template) else {
        return Ok(Some(None));
    };
    Ok(Some(
        spec.buttons.iter().position(|b| b.kind == ButtonKind::Flow),
    ))
}
