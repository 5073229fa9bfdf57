//! What a probe argument may be, and how it reaches its register.
//!
//! A SystemTap argument spec is `SIZE@LOCATION`: `SIZE` is the width in bytes, negative for a signed
//! value (`-4@%rax` is an `i32`). The probe macros find each argument's spec through [`SdtArg::SPEC`],
//! resolved at compile time from the argument's type, and pass the value in a 64-bit register,
//! sign- or zero-extended, so that a tool that reads the whole register still sees the right value.

mod sealed {
    pub trait Sealed {}
}

/// A type that a probe can carry: the integers up to 64 bits, `bool`, `char`, raw pointers and
/// references (whose address is passed).
///
/// The trait is sealed: the notes the macros write are only as right as these `SPEC`s, so the set
/// of types is closed. Convert other values first (`x.to_bits()` for a float, `s.as_ptr()` for a
/// string).
pub trait SdtArg: sealed::Sealed + Copy {
    /// The argument's size in bytes, negative if it is signed: the `SIZE` of `SIZE@%reg`.
    const SPEC: i8;
    /// The value as the 64-bit register passes it: sign-extended when signed, zero-extended
    /// otherwise.
    fn into_word(self) -> u64;
}

macro_rules! signed {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl SdtArg for $t {
            const SPEC: i8 = -(core::mem::size_of::<$t>() as i8);
            #[inline(always)]
            fn into_word(self) -> u64 {
                self as i64 as u64
            }
        }
    )*};
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl SdtArg for $t {
            const SPEC: i8 = core::mem::size_of::<$t>() as i8;
            #[inline(always)]
            fn into_word(self) -> u64 {
                self as u64
            }
        }
    )*};
}

signed!(i8, i16, i32, i64, isize);
unsigned!(u8, u16, u32, u64, usize, bool, char);

impl<T: ?Sized> sealed::Sealed for *const T {}
impl<T: ?Sized> SdtArg for *const T {
    const SPEC: i8 = core::mem::size_of::<usize>() as i8;
    #[inline(always)]
    fn into_word(self) -> u64 {
        self.cast::<u8>() as usize as u64
    }
}

impl<T: ?Sized> sealed::Sealed for *mut T {}
impl<T: ?Sized> SdtArg for *mut T {
    const SPEC: i8 = core::mem::size_of::<usize>() as i8;
    #[inline(always)]
    fn into_word(self) -> u64 {
        self.cast::<u8>() as usize as u64
    }
}

impl<T: ?Sized> sealed::Sealed for &T {}
impl<T: ?Sized> SdtArg for &T {
    const SPEC: i8 = core::mem::size_of::<usize>() as i8;
    #[inline(always)]
    fn into_word(self) -> u64 {
        (self as *const T).into_word()
    }
}

impl<T: ?Sized> sealed::Sealed for core::ptr::NonNull<T> {}
impl<T: ?Sized> SdtArg for core::ptr::NonNull<T> {
    const SPEC: i8 = core::mem::size_of::<usize>() as i8;
    #[inline(always)]
    fn into_word(self) -> u64 {
        self.as_ptr().into_word()
    }
}

#[cfg(test)]
mod tests {
    use super::SdtArg;

    #[test]
    fn specs_give_size_and_signedness() {
        assert_eq!([i8::SPEC, i16::SPEC, i32::SPEC, i64::SPEC, isize::SPEC], [-1, -2, -4, -8, -8]);
        assert_eq!([u8::SPEC, u16::SPEC, u32::SPEC, u64::SPEC, usize::SPEC], [1, 2, 4, 8, 8]);
        assert_eq!([bool::SPEC, char::SPEC, <*const u8>::SPEC, <&str>::SPEC], [1, 4, 8, 8]);
    }

    #[test]
    fn signed_values_are_sign_extended_and_unsigned_ones_zero_extended() {
        assert_eq!((-5i8).into_word(), u64::MAX - 4);
        assert_eq!((-70_000i32).into_word() as i64, -70_000);
        assert_eq!(200u8.into_word(), 200);
        assert_eq!(u32::MAX.into_word(), 0xffff_ffff);
        assert_eq!(true.into_word(), 1);
        assert_eq!('é'.into_word(), 0xe9);
        let x = 7u32;
        assert_eq!((&x).into_word(), &x as *const u32 as u64);
        assert_eq!("ab".into_word(), "ab".as_ptr() as u64);
    }
}
