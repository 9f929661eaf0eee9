//! An authenticated request: whom it speaks for, how that binds its start body, and which
//! sessions it may reach.

use serde_json::Value;

use super::{Principal, Scope};

/// The request fields a start body names its tenant and user with.
const TENANT_FIELD: &str = "tenant_id";
const USER_FIELD: &str = "user_id";

/// Which owner fields a product's start request has, read once from its JSON Schema: the
/// server writes the caller's tenant and user into those it has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OwnerFields {
    tenant: bool,
    user: bool,
}

impl OwnerFields {
    /// The owner fields among the top-level properties of `schema`.
    pub(crate) fn of_schema(schema: &Value) -> Self {
        let has = |field: &str| {
            schema
                .get("properties")
                .and_then(|properties| properties.get(field))
                .is_some()
        };
        OwnerFields {
            tenant: has(TENANT_FIELD),
            user: has(USER_FIELD),
        }
    }
}

/// A start body that names a tenant or user its caller does not speak for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Forbidden {
    pub(crate) field: &'static str,
    pub(crate) message: String,
}

/// An authenticated request.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) principal: Principal,
    /// Whether `Authorization: Bearer` carried the credential (then it is not a session
    /// token).
    bearer_is_credential: bool,
}

impl Caller {
    pub(crate) fn new(principal: Principal, bearer_is_credential: bool) -> Self {
        Caller {
            principal,
            bearer_is_credential,
        }
    }

    /// Where a session route may read the session token from the bearer header: only
    /// when the header is not the credential.
    pub(crate) fn session_bearer<'a>(&self, bearer: Option<&'a str>) -> Option<&'a str> {
        bearer.filter(|_| !self.bearer_is_credential)
    }

    /// Binds a start body to the caller: a `tenant_id` or `user_id` it names must be the
    /// caller's (403 otherwise), and the caller's are written into the fields the
    /// product's start request has.
    pub(crate) fn bind_start(
        &self,
        body: &mut Value,
        fields: OwnerFields,
    ) -> Result<(), Forbidden> {
        for (field, scope, declared) in [
            (TENANT_FIELD, &self.principal.tenant, fields.tenant),
            (USER_FIELD, &self.principal.user, fields.user),
        ] {
            let Scope::Only(own) = scope else { continue };
            match body.get(field) {
                None | Some(Value::Null) => {}
                Some(Value::String(named)) if named == own => {}
                Some(named) => {
                    return Err(Forbidden {
                        field,
                        message: format!(
                            "{field} {named} is not the caller's: its credential speaks for {own:?}"
                        ),
                    });
                }
            }
            if declared && let Some(object) = body.as_object_mut() {
                object.insert(field.to_owned(), Value::String(own.clone()));
            }
        }
        Ok(())
    }

    /// The tenant a session started with `body` (already bound) belongs to: the caller's,
    /// or on an open server the one the body names, if any.
    pub(crate) fn session_tenant(&self, body: &Value) -> Option<String> {
        match &self.principal.tenant {
            Scope::Only(tenant) => Some(tenant.clone()),
            Scope::Any => body
                .get(TENANT_FIELD)
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    }

    /// Whether the caller may reach a session of `tenant`: any, when it speaks for any
    /// tenant; else only its own tenant's.
    pub(crate) fn may_reach(&self, tenant: Option<&str>) -> bool {
        match &self.principal.tenant {
            Scope::Any => true,
            Scope::Only(own) => tenant == Some(own.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caller(tenant: Scope, user: Scope) -> Caller {
        Caller::new(
            Principal {
                tenant,
                user,
                credential: "test".into(),
            },
            true,
        )
    }

    const BOTH: OwnerFields = OwnerFields {
        tenant: true,
        user: true,
    };

    #[test]
    fn a_bound_caller_writes_its_tenant_and_user_and_refuses_others() {
        let ada = caller(Scope::Only("acme".into()), Scope::Only("ada".into()));
        let mut body = json!({"resume_text": "r"});
        ada.bind_start(&mut body, BOTH).unwrap();
        assert_eq!(
            body,
            json!({"resume_text": "r", "tenant_id": "acme", "user_id": "ada"})
        );

        let mut same = json!({"tenant_id": "acme", "user_id": "ada"});
        assert!(ada.bind_start(&mut same, BOTH).is_ok());

        for (body, field) in [
            (json!({"tenant_id": "globex"}), "tenant_id"),
            (json!({"user_id": "bob"}), "user_id"),
            (json!({"tenant_id": 7}), "tenant_id"),
        ] {
            let error = ada.bind_start(&mut body.clone(), BOTH).unwrap_err();
            assert_eq!(error.field, field, "{body}");
        }
    }

    #[test]
    fn fields_a_product_lacks_are_not_written() {
        let ada = caller(Scope::Only("acme".into()), Scope::Any);
        let mut body = json!({"text": "x"});
        ada.bind_start(&mut body, OwnerFields::default()).unwrap();
        assert_eq!(body, json!({"text": "x"}));
        assert_eq!(ada.session_tenant(&body).as_deref(), Some("acme"));
        // A key for any user of the tenant leaves the named user alone.
        let mut body = json!({"user_id": "bob"});
        ada.bind_start(&mut body, BOTH).unwrap();
        assert_eq!(body, json!({"user_id": "bob", "tenant_id": "acme"}));
    }

    #[test]
    fn sessions_are_reached_by_their_tenant_only() {
        let acme = caller(Scope::Only("acme".into()), Scope::Any);
        assert!(acme.may_reach(Some("acme")));
        assert!(!acme.may_reach(Some("globex")));
        assert!(!acme.may_reach(None));
        let local = Caller::new(Principal::local(), false);
        assert!(local.may_reach(None) && local.may_reach(Some("globex")));
        assert_eq!(
            local
                .session_tenant(&json!({"tenant_id": "globex"}))
                .as_deref(),
            Some("globex")
        );
    }

    #[test]
    fn the_schema_says_which_owner_fields_a_start_has() {
        let schema = json!({"properties": {"tenant_id": {}, "resume_text": {}}});
        assert_eq!(
            OwnerFields::of_schema(&schema),
            OwnerFields {
                tenant: true,
                user: false
            }
        );
        assert_eq!(OwnerFields::of_schema(&json!({})), OwnerFields::default());
    }
}
