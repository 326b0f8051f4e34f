//! send_interactive's commerce kinds (`product`, `product_list`, `catalog`): their
//! parameters put into the platform's action keys. The message then goes the way every
//! interactive message goes (`rich::send_rich`, then `Core::send`).

use warden_rules::rich::{
    ActionFields, CatalogParameters, InteractiveType, Parameters, RichError, Section,
};

use super::SendInteractiveIn;
use crate::input::fields::opt_string;

/// Whether `kind` is one of this file's.
fn is_commerce(kind: InteractiveType) -> bool {
    matches!(
        kind,
        InteractiveType::Product | InteractiveType::ProductList | InteractiveType::Catalog
    )
}

/// The action of a commerce `kind`. Another kind's parameters given with it are passed
/// on so the rules refuse them by name.
pub(super) fn action(
    kind: InteractiveType,
    a: &SendInteractiveIn,
    sections: Option<Vec<Section>>,
    buttons_given: bool,
) -> Result<ActionFields, RichError> {
    for (given, field) in [
        (a.url.is_some(), "url"),
        (a.display_text.is_some(), "display_text"),
        (
            a.thumbnail_product_retailer_id.is_some() && kind != InteractiveType::Catalog,
            "thumbnail_product_retailer_id",
        ),
    ] {
        if given {
            return Err(RichError {
                field: field.into(),
                problem: "does not belong to this kind of interactive message".into(),
            });
        }
    }
    let foreign = ActionFields {
        buttons: buttons_given.then(Vec::new),
        button: opt_string(&a.button_label),
        ..ActionFields::default()
    };
    let thumbnail = opt_string(&a.thumbnail_product_retailer_id);
    Ok(match kind {
        InteractiveType::Product => ActionFields {
            catalog_id: opt_string(&a.catalog_id),
            product_retailer_id: opt_string(&a.product_retailer_id),
            sections: sections.map(|_| Vec::new()),
            ..foreign
        },
        InteractiveType::ProductList => ActionFields {
            catalog_id: opt_string(&a.catalog_id),
            sections: Some(sections.unwrap_or_default()),
            product_retailer_id: opt_string(&a.product_retailer_id),
            ..foreign
        },
        InteractiveType::Catalog => ActionFields {
            name: Some("catalog_message".into()),
            parameters: thumbnail.map(|t| {
                Parameters::Catalog(CatalogParameters {
                    thumbnail_product_retailer_id: Some(t),
                })
            }),
            catalog_id: opt_string(&a.catalog_id),
            product_retailer_id: opt_string(&a.product_retailer_id),
            sections: sections.map(|_| Vec::new()),
            ..foreign
        },
        // The caller's match sends only this file's kinds here.
        _ => ActionFields {
            catalog_id: opt_string(&a.catalog_id),
            ..foreign
        },
    })
}

/// The commerce parameters given with another kind (buttons, list, cta_url, ...): added to
/// its action so the rules refuse the first by name. `thumbnail_product_retailer_id` has
/// no action key outside a catalog message, so it is named here.
pub(super) fn refuse_foreign(
    kind: InteractiveType,
    a: &SendInteractiveIn,
    action: &mut ActionFields,
) -> Result<(), RichError> {
    if is_commerce(kind) {
        return Ok(());
    }
    action.catalog_id = opt_string(&a.catalog_id);
    action.product_retailer_id = opt_string(&a.product_retailer_id);
    if a.thumbnail_product_retailer_id.is_some() {
        return Err(RichError {
            field: "thumbnail_product_retailer_id".into(),
            problem: "belongs to kind catalog only".into(),
        });
    }
    Ok(())
}
