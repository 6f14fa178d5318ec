//! Setting element properties without the panics of the plain gstreamer-rs setters.
//!
//! `ObjectExt::set_property` panics on a missing property or a type mismatch; element
//! versions differ across GStreamer releases (and the NVENC elements cannot be inspected on a
//! machine without a GPU), so every property cg-media sets goes through these checks.

use gstreamer as gst;
use gstreamer::glib;
use gstreamer::prelude::*;

use crate::Error;

/// Sets `name` to `value` if the element has that property with exactly that type.
pub(crate) fn set<V: ToValue>(
    element: &impl IsA<gst::Element>,
    name: &str,
    value: V,
) -> Result<(), Error> {
    let pspec = pspec(element, name)?;
    let value = value.to_value();
    if !value.type_().is_a(pspec.value_type()) {
        return Err(Error::Pipeline(format!(
            "property {name} of {} has type {}, not {}",
            element.as_ref().name(),
            pspec.value_type(),
            value.type_()
        )));
    }
    element.as_ref().set_property(name, value);
    Ok(())
}

/// Sets `name` from its string form (enum nicks, flags such as `"default"`).
pub(crate) fn set_str(
    element: &impl IsA<gst::Element>,
    name: &str,
    value: &str,
) -> Result<(), Error> {
    let pspec = pspec(element, name)?;
    let v = glib::Value::deserialize_with_pspec(value, &pspec).map_err(|_| {
        Error::InvalidConfig(format!(
            "{value:?} is not a valid value of property {name} of {}",
            element.as_ref().name()
        ))
    })?;
    element.as_ref().set_property(name, v);
    Ok(())
}

fn pspec(element: &impl IsA<gst::Element>, name: &str) -> Result<glib::ParamSpec, Error> {
    element.as_ref().find_property(name).ok_or_else(|| {
        Error::Pipeline(format!(
            "element {} has no property {name}",
            element.as_ref().name()
        ))
    })
}

/// Creates an element, or says which plugin is missing.
pub(crate) fn make(factory: &'static str, plugin: &'static str) -> Result<gst::Element, Error> {
    gst::ElementFactory::make(factory)
        .build()
        .map_err(|_| Error::MissingElement {
            element: factory,
            plugin,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_type_or_name_or_value_is_an_error_not_a_panic() {
        crate::init().unwrap();
        let q = make("queue", "core").unwrap();
        assert!(set(&q, "max-size-buffers", 3u32).is_ok());
        assert_eq!(q.property::<u32>("max-size-buffers"), 3);
        assert!(set(&q, "max-size-buffers", 3i64).is_err());
        assert!(set(&q, "no-such-thing", 3u32).is_err());
        assert!(set_str(&q, "leaky", "downstream").is_ok());
        assert!(set_str(&q, "leaky", "sideways").is_err());
    }
}
