//! A small reader of the kernel's BTF (`/sys/kernel/btf/vmlinux`), read at
//! run time only: the type ids and structure offsets the BTF-typed raw
//! tracepoint programs need (`wakeups`), so that nothing about the running
//! kernel is needed at build time.
//!
//! The format (Documentation/bpf/btf.rst): a header, then a type section
//! (one `struct btf_type` of 12 bytes per type, ids from 1 in order, each
//! followed by its kind's trailing data) and a string section (names are
//! offsets into it). Only what walks from a name to a structure member is
//! interpreted; every other kind is skipped by its size.

use std::path::Path;

/// Where the running kernel publishes its own BTF.
pub const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

const MAGIC: u16 = 0xeb9f;
/// The header's fixed part: magic, version, flags, hdr_len, then the type
/// and string sections' offsets and lengths.
const HEADER_BYTES: usize = 24;
/// `struct btf_type`: name_off, info, size-or-type.
const TYPE_BYTES: usize = 12;

/// The kinds of BTF types (`BTF_KIND_*`).
/// Why the kernel's BTF could not be read or does not say what is asked:
/// one line (`no Struct named 'hrtimer' in the kernel's BTF`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BtfError(pub String);

impl From<String> for BtfError {
    fn from(why: String) -> BtfError {
        BtfError(why)
    }
}

impl From<&str> for BtfError {
    fn from(why: &str) -> BtfError {
        BtfError(why.to_string())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int = 1,
    Ptr = 2,
    Array = 3,
    Struct = 4,
    Union = 5,
    Enum = 6,
    Fwd = 7,
    Typedef = 8,
    Volatile = 9,
    Const = 10,
    Restrict = 11,
    Func = 12,
    FuncProto = 13,
    Var = 14,
    Datasec = 15,
    Float = 16,
    DeclTag = 17,
    TypeTag = 18,
    Enum64 = 19,
}

impl Kind {
    fn from_bits(bits: u32) -> Option<Kind> {
        use Kind::*;
        Some(match bits {
            1 => Int,
            2 => Ptr,
            3 => Array,
            4 => Struct,
            5 => Union,
            6 => Enum,
            7 => Fwd,
            8 => Typedef,
            9 => Volatile,
            10 => Const,
            11 => Restrict,
            12 => Func,
            13 => FuncProto,
            14 => Var,
            15 => Datasec,
            16 => Float,
            17 => DeclTag,
            18 => TypeTag,
            19 => Enum64,
            _ => return None,
        })
    }

    /// Bytes of kind-specific data after the 12-byte type, for `vlen` entries.
    fn trailing_bytes(self, vlen: usize) -> usize {
        use Kind::*;
        match self {
            Int | Var | DeclTag => 4,
            Array => 12,
            Struct | Union | Datasec | Enum64 => 12 * vlen,
            Enum | FuncProto => 8 * vlen,
            Ptr | Fwd | Typedef | Volatile | Const | Restrict | Func | Float | TypeTag => 0,
        }
    }

    /// Kinds that only qualify or rename another type.
    fn is_alias(self) -> bool {
        use Kind::*;
        matches!(self, Typedef | Volatile | Const | Restrict | TypeTag)
    }
}

/// One type, as stored.
#[derive(Debug, Clone, Copy)]
struct TypeEntry {
    name_off: u32,
    kind: Kind,
    kind_flag: bool,
    vlen: usize,
    /// `size` for ints, enums, structs and unions; the referred type for
    /// pointers, typedefs, qualifiers, functions and prototypes (the return).
    size_or_type: u32,
    /// Byte offset of the trailing data in the type section.
    data: usize,
}

/// A member found by `Btf::member`: where it is and how wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// Bytes from the start of the outermost structure.
    pub offset: u32,
    /// Bytes of the member's (resolved) type.
    pub size: u32,
    /// The member's type id.
    pub type_id: u32,
}

/// Parsed BTF: the type and string sections and an index of the types.
#[derive(Debug)]
pub struct Btf {
    types: Vec<u8>,
    strings: Vec<u8>,
    /// Type id N is `entries[N - 1]` (id 0 is void).
    entries: Vec<TypeEntry>,
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

impl Btf {
    /// The running kernel's BTF.
    pub fn vmlinux() -> Result<Btf, BtfError> {
        Btf::read(Path::new(VMLINUX))
    }

    pub fn read(path: &Path) -> Result<Btf, BtfError> {
        let bytes = std::fs::read(path).map_err(|e| {
            BtfError::from(format!(
                "cannot read {}: {}",
                path.display(),
                crate::rt::os_error_text(&e)
            ))
        })?;
        Btf::parse(&bytes).map_err(|why| BtfError::from(format!("{}: {why}", path.display())))
    }

    /// Parses a little-endian BTF blob (the kernel's byte order here).
    pub fn parse(bytes: &[u8]) -> Result<Btf, BtfError> {
        if u16_at(bytes, 0) != Some(MAGIC) {
            return Err(BtfError::from(
                "not BTF (bad magic, or another byte order)".to_string(),
            ));
        }
        let field = |at| u32_at(bytes, at).ok_or("truncated header");
        let header_len = field(4)? as usize;
        if header_len < HEADER_BYTES {
            return Err(BtfError::from(format!(
                "header of {header_len} bytes is too short"
            )));
        }
        let section = |off_at, len_at| -> Result<Vec<u8>, BtfError> {
            let start = header_len + field(off_at)? as usize;
            let len = field(len_at)? as usize;
            bytes
                .get(start..start + len)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| BtfError::from("a section runs past the end".to_string()))
        };
        let types = section(8, 12)?;
        let strings = section(16, 20)?;
        let mut entries = Vec::new();
        let mut at = 0;
        while at < types.len() {
            let bad = || {
                BtfError::from(format!(
                    "type {} is truncated or of an unknown kind",
                    entries.len() + 1
                ))
            };
            let name_off = u32_at(&types, at).ok_or_else(bad)?;
            let info = u32_at(&types, at + 4).ok_or_else(bad)?;
            let size_or_type = u32_at(&types, at + 8).ok_or_else(bad)?;
            let kind = Kind::from_bits((info >> 24) & 0x1f).ok_or_else(bad)?;
            let vlen = (info & 0xffff) as usize;
            let data = at + TYPE_BYTES;
            at = data + kind.trailing_bytes(vlen);
            if at > types.len() {
                return Err(bad());
            }
            entries.push(TypeEntry {
                name_off,
                kind,
                kind_flag: info >> 31 == 1,
                vlen,
                size_or_type,
                data,
            });
        }
        Ok(Btf {
            types,
            strings,
            entries,
        })
    }

    fn entry(&self, id: u32) -> Result<&TypeEntry, BtfError> {
        id.checked_sub(1)
            .and_then(|i| self.entries.get(i as usize))
            .ok_or_else(|| BtfError::from(format!("no BTF type {id}")))
    }

    fn name_at(&self, offset: u32) -> &str {
        let tail = self.strings.get(offset as usize..).unwrap_or(&[]);
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        std::str::from_utf8(&tail[..end]).unwrap_or("")
    }

    /// The name of type `id` ("" when anonymous).
    pub fn name(&self, id: u32) -> Result<&str, BtfError> {
        Ok(self.name_at(self.entry(id)?.name_off))
    }

    pub fn kind(&self, id: u32) -> Result<Kind, BtfError> {
        Ok(self.entry(id)?.kind)
    }

    /// The id of the type of kind `kind` named `name`.
    pub fn find(&self, name: &str, kind: Kind) -> Result<u32, BtfError> {
        self.entries
            .iter()
            .position(|e| e.kind == kind && self.name_at(e.name_off) == name)
            .map(|i| i as u32 + 1)
            .ok_or_else(|| {
                BtfError::from(format!("no {kind:?} named '{name}' in the kernel's BTF"))
            })
    }

    /// `id` with typedefs and qualifiers taken off.
    pub fn resolve(&self, mut id: u32) -> Result<u32, BtfError> {
        // A chain longer than the table would be a loop.
        for _ in 0..=self.entries.len() {
            if id == 0 {
                return Ok(0);
            }
            let entry = self.entry(id)?;
            if !entry.kind.is_alias() {
                return Ok(id);
            }
            id = entry.size_or_type;
        }
        Err(BtfError::from(format!("BTF type {id} refers to itself")))
    }

    /// The type a pointer `id` points to, qualifiers and typedefs taken off
    /// (0 for `void *`).
    pub fn pointee(&self, id: u32) -> Result<u32, BtfError> {
        let id = self.resolve(id)?;
        let entry = self.entry(id)?;
        if entry.kind != Kind::Ptr {
            return Err(BtfError::from(format!(
                "BTF type {id} is a {:?}, not a pointer",
                entry.kind
            )));
        }
        self.resolve(entry.size_or_type)
    }

    /// Bytes of type `id` (pointers are 8: the kernel's BTF is 64-bit here).
    pub fn size_of(&self, id: u32) -> Result<u32, BtfError> {
        let id = self.resolve(id)?;
        let entry = self.entry(id)?;
        match entry.kind {
            Kind::Int | Kind::Enum | Kind::Enum64 | Kind::Struct | Kind::Union | Kind::Float => {
                Ok(entry.size_or_type)
            }
            Kind::Ptr => Ok(8),
            Kind::Array => {
                let element = u32_at(&self.types, entry.data).unwrap_or(0);
                let count = u32_at(&self.types, entry.data + 8).unwrap_or(0);
                Ok(self.size_of(element)?.saturating_mul(count))
            }
            other => Err(BtfError::from(format!(
                "BTF type {id} ({other:?}) has no size"
            ))),
        }
    }

    /// The members of structure or union `id`: (name, type, bit offset).
    fn members(&self, id: u32) -> Result<Vec<(&str, u32, u32)>, BtfError> {
        let entry = self.entry(id)?;
        if !matches!(entry.kind, Kind::Struct | Kind::Union) {
            return Err(BtfError::from(format!(
                "BTF type {id} is a {:?}, not a structure",
                entry.kind
            )));
        }
        (0..entry.vlen)
            .map(|i| {
                let at = entry.data + 12 * i;
                let word = |k: usize| u32_at(&self.types, at + 4 * k).ok_or("truncated member");
                let name = self.name_at(word(0)?);
                let offset = word(2)?;
                // With kind_flag the top 8 bits are a bit field's width.
                let bits = if entry.kind_flag {
                    offset & 0xff_ffff
                } else {
                    offset
                };
                Ok((name, word(1)?, bits))
            })
            .collect()
    }

    /// Member `name` of structure `id`, looking into anonymous structures
    /// and unions as C does: (type, bit offset from `id`'s start).
    fn find_member(&self, id: u32, name: &str) -> Result<Option<(u32, u32)>, BtfError> {
        for (member, type_id, bits) in self.members(id)? {
            if member == name {
                return Ok(Some((type_id, bits)));
            }
            let inner = self.resolve(type_id)?;
            if member.is_empty()
                && matches!(self.kind(inner)?, Kind::Struct | Kind::Union)
                && let Some((found, more)) = self.find_member(inner, name)?
            {
                return Ok(Some((found, bits + more)));
            }
        }
        Ok(None)
    }

    /// The member at dotted `path` (e.g. `node.expires`) of the structure
    /// named `structure`: its byte offset and size. Bit fields are refused.
    pub fn member(&self, structure: &str, path: &str) -> Result<Member, BtfError> {
        let mut container = self.find(structure, Kind::Struct)?;
        let mut bits = 0u32;
        let mut type_id = container;
        for (depth, name) in path.split('.').enumerate() {
            if depth > 0 {
                container = self.resolve(type_id)?;
                if !matches!(self.kind(container)?, Kind::Struct | Kind::Union) {
                    return Err(BtfError::from(format!(
                        "{structure}.{path}: '{name}' is inside no structure"
                    )));
                }
            }
            let (found, offset) = self.find_member(container, name)?.ok_or_else(|| {
                BtfError::from(format!("struct {structure} has no member '{path}'"))
            })?;
            type_id = found;
            bits += offset;
        }
        if !bits.is_multiple_of(8) {
            return Err(BtfError::from(format!("{structure}.{path} is a bit field")));
        }
        Ok(Member {
            offset: bits / 8,
            size: self.size_of(type_id)?,
            type_id,
        })
    }

    /// The arguments of raw tracepoint `event` (e.g. `hrtimer_start`) as
    /// BTF-typed programs see them: the id of the typedef
    /// `btf_trace_<event>` (the program's `attach_btf_id`) and the type of
    /// each argument, in order (the prototype's leading `void *` data
    /// pointer is the kernel's, not an argument).
    pub fn tracepoint(&self, event: &str) -> Result<(u32, Vec<u32>), BtfError> {
        let typedef = self.find(&format!("btf_trace_{event}"), Kind::Typedef)?;
        let proto = self.pointee(typedef)?;
        let entry = self.entry(proto)?;
        if entry.kind != Kind::FuncProto || entry.vlen == 0 {
            return Err(BtfError::from(format!(
                "btf_trace_{event} is not a pointer to a prototype"
            )));
        }
        let args = (1..entry.vlen)
            .map(|i| u32_at(&self.types, entry.data + 8 * i + 4).ok_or("truncated prototype"))
            .collect::<Result<Vec<u32>, &str>>()?;
        Ok((typedef, args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a BTF blob by hand, as the kernel lays it out.
    #[derive(Default)]
    struct Blob {
        types: Vec<u8>,
        strings: Vec<u8>,
    }

    impl Blob {
        fn new() -> Blob {
            // String offset 0 is the empty name.
            Blob {
                types: Vec::new(),
                strings: vec![0],
            }
        }

        fn name(&mut self, name: &str) -> u32 {
            if name.is_empty() {
                return 0;
            }
            let at = self.strings.len() as u32;
            self.strings.extend_from_slice(name.as_bytes());
            self.strings.push(0);
            at
        }

        fn words(&mut self, words: &[u32]) -> &mut Blob {
            for w in words {
                self.types.extend_from_slice(&w.to_le_bytes());
            }
            self
        }

        /// One type: name, kind, kind_flag, vlen, size-or-type.
        fn ty(
            &mut self,
            name: &str,
            kind: Kind,
            flag: bool,
            vlen: u32,
            size_or_type: u32,
        ) -> &mut Blob {
            let name = self.name(name);
            let info = (u32::from(flag) << 31) | ((kind as u32) << 24) | vlen;
            self.words(&[name, info, size_or_type])
        }

        /// A structure member or prototype parameter (without offset).
        fn member(&mut self, name: &str, type_id: u32, bit_offset: u32) -> &mut Blob {
            let name = self.name(name);
            self.words(&[name, type_id, bit_offset])
        }

        fn param(&mut self, type_id: u32) -> &mut Blob {
            self.words(&[0, type_id])
        }

        fn bytes(&self) -> Vec<u8> {
            let mut out = Vec::new();
            out.extend_from_slice(&MAGIC.to_le_bytes());
            out.extend_from_slice(&[1, 0]); // version 1, no flags
            for w in [
                HEADER_BYTES as u32,
                0,
                self.types.len() as u32,
                self.types.len() as u32,
                self.strings.len() as u32,
            ] {
                out.extend_from_slice(&w.to_le_bytes());
            }
            out.extend_from_slice(&self.types);
            out.extend_from_slice(&self.strings);
            out
        }
    }

    /// hrtimer as the kernel has it (reduced), its tracepoint, a bit field
    /// structure and a typedef that refers to itself.
    fn sample() -> Vec<u8> {
        let mut b = Blob::new();
        b.ty("long long", Kind::Int, false, 0, 8)
            .words(&[(1 << 24) | 64]); // 1
        b.ty("ktime_t", Kind::Typedef, false, 0, 1); // 2
        b.ty("rb_node", Kind::Struct, false, 0, 24); // 3
        b.ty("timerqueue_node", Kind::Struct, false, 2, 32) // 4
            .member("node", 3, 0)
            .member("expires", 2, 192);
        b.ty("hrtimer", Kind::Struct, false, 3, 64) // 5
            .member("node", 4, 0)
            .member("_softexpires", 2, 256)
            .member("", 6, 320);
        b.ty("", Kind::Union, false, 2, 8) // 6
            .member("function", 7, 0)
            .member("raw", 1, 0);
        b.ty("", Kind::Ptr, false, 0, 5); // 7: struct hrtimer *
        b.ty("", Kind::FuncProto, false, 3, 0) // 8
            .param(9)
            .param(7)
            .param(10);
        b.ty("", Kind::Ptr, false, 0, 0); // 9: void *
        b.ty("hrtimer_mode", Kind::Enum, false, 1, 4) // 10
            .words(&[0, 0]);
        b.ty("btf_trace_hrtimer_start", Kind::Typedef, false, 0, 12); // 11
        b.ty("", Kind::Ptr, false, 0, 8); // 12
        b.ty("flags", Kind::Struct, true, 2, 4) // 13
            .member("low", 1, 3 << 24)
            .member("high", 1, (5 << 24) | 3);
        b.ty("loop", Kind::Typedef, false, 0, 14); // 14
        b.ty("", Kind::Const, false, 0, 2); // 15: const ktime_t
        b.bytes()
    }

    #[test]
    fn types_are_found_by_name_and_kind() {
        let btf = Btf::parse(&sample()).unwrap();
        assert_eq!(btf.find("hrtimer", Kind::Struct), Ok(5));
        assert_eq!(btf.find("ktime_t", Kind::Typedef), Ok(2));
        assert_eq!(btf.find("btf_trace_hrtimer_start", Kind::Typedef), Ok(11));
        assert_eq!(btf.name(10), Ok("hrtimer_mode"));
        assert_eq!(btf.kind(8), Ok(Kind::FuncProto));
        assert!(
            btf.find("hrtimer", Kind::Typedef)
                .unwrap_err()
                .0
                .contains("no Typedef named 'hrtimer'")
        );
        assert!(btf.name(16).unwrap_err().0.contains("no BTF type 16"));
        assert!(btf.name(0).is_err(), "void has no entry");
    }

    #[test]
    fn typedefs_qualifiers_and_pointers_resolve() {
        let btf = Btf::parse(&sample()).unwrap();
        assert_eq!(btf.resolve(15), Ok(1), "const ktime_t is long long");
        assert_eq!(btf.pointee(7), Ok(5));
        assert_eq!(btf.pointee(9), Ok(0), "void *");
        assert!(btf.pointee(5).unwrap_err().0.contains("not a pointer"));
        assert!(btf.resolve(14).unwrap_err().0.contains("refers to itself"));
        assert_eq!(btf.size_of(2), Ok(8));
        assert_eq!(btf.size_of(7), Ok(8));
        assert_eq!(btf.size_of(10), Ok(4));
        assert_eq!(btf.size_of(5), Ok(64));
    }

    #[test]
    fn members_by_dotted_path() {
        let btf = Btf::parse(&sample()).unwrap();
        assert_eq!(
            btf.member("hrtimer", "node.expires"),
            Ok(Member {
                offset: 24,
                size: 8,
                type_id: 2
            })
        );
        assert_eq!(
            btf.member("hrtimer", "_softexpires"),
            Ok(Member {
                offset: 32,
                size: 8,
                type_id: 2
            })
        );
        // Inside the anonymous union, as C finds it.
        assert_eq!(btf.member("hrtimer", "function").map(|m| m.offset), Ok(40));
        assert_eq!(btf.member("hrtimer", "node").map(|m| m.size), Ok(32));
        assert!(
            btf.member("hrtimer", "node.nope")
                .unwrap_err()
                .0
                .contains("no member 'node.nope'")
        );
        assert!(
            btf.member("hrtimer", "_softexpires.x")
                .unwrap_err()
                .0
                .contains("inside no structure")
        );
        // With kind_flag, the offset's low 24 bits: bit 3 is a bit field.
        assert!(
            btf.member("flags", "high")
                .unwrap_err()
                .0
                .contains("bit field")
        );
        assert_eq!(btf.member("flags", "low").map(|m| m.offset), Ok(0));
    }

    #[test]
    fn a_tracepoint_prototype_without_its_data_pointer() {
        let btf = Btf::parse(&sample()).unwrap();
        let (id, args) = btf.tracepoint("hrtimer_start").unwrap();
        assert_eq!(id, 11);
        assert_eq!(args, vec![7, 10]);
        assert_eq!(btf.pointee(args[0]), Ok(5));
        assert!(btf.tracepoint("hrtimer_cancel").is_err());
    }

    #[test]
    fn broken_blobs_are_errors_not_panics() {
        let good = sample();
        assert!(Btf::parse(&good[..1]).unwrap_err().0.contains("magic"));
        let mut swapped = good.clone();
        swapped.swap(0, 1);
        assert!(Btf::parse(&swapped).unwrap_err().0.contains("magic"));
        // Cut anywhere: never a panic, always an error.
        for len in 4..good.len() {
            assert!(Btf::parse(&good[..len]).is_err(), "cut at {len}");
        }
        // An unknown kind (31).
        let mut odd = good.clone();
        odd[HEADER_BYTES + 7] = 31 | 0x80;
        assert!(Btf::parse(&odd).unwrap_err().0.contains("unknown kind"));
    }

    #[test]
    fn the_running_kernels_btf() {
        let path = Path::new(VMLINUX);
        if !path.exists() {
            eprintln!("skipped: {VMLINUX} does not exist (a kernel without CONFIG_DEBUG_INFO_BTF)");
            return;
        }
        let btf = Btf::vmlinux().unwrap();
        // A 64-bit kernel's hrtimer starts with its timerqueue_node (an
        // rb_node of three pointers, then the expiry); the soft expiry
        // follows: the same in every kernel since 2.6.
        assert_eq!(
            btf.member("hrtimer", "node.expires")
                .map(|m| (m.offset, m.size)),
            Ok((24, 8))
        );
        assert_eq!(
            btf.member("hrtimer", "_softexpires")
                .map(|m| (m.offset, m.size)),
            Ok((32, 8))
        );
        assert_eq!(btf.member("task_struct", "pid").map(|m| m.size), Ok(4));
        let hrtimer = btf.find("hrtimer", Kind::Struct).unwrap();
        for event in ["hrtimer_start", "hrtimer_expire_entry"] {
            let (typedef, args) = btf.tracepoint(event).unwrap();
            assert_eq!(btf.kind(typedef), Ok(Kind::Typedef));
            assert_eq!(
                btf.pointee(args[0]),
                Ok(hrtimer),
                "{event}'s first argument"
            );
        }
    }
}
