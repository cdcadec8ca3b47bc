//! The cache file of the method table: where it lives, the key that says which machine
//! and processor it was measured on, and reading and writing it. Nothing read from it
//! is trusted: a file that does not parse, or whose key differs, is ignored.

use std::path::{Path, PathBuf};

use crate::transport::shm::copy::table::MethodTable;

/// First line of the file; changed when the methods, the way they are timed or the
/// format change (v4: each method timed through the path a put takes).
const MAGIC: &str = "gaspar copy table v4";

/// What a table is valid for: this machine and this processor, as `/proc/cpuinfo` and the
/// host name describe them.
///
/// ```
/// let cpu = gaspar::copy_engine::CpuKey::current();
/// println!("tables for {} are filed under {}", cpu.model, cpu.hash);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuKey {
    /// The processor's model name.
    pub model: String,
    /// A hash of gaspar's version, host name, vendor, family, model, stepping, microcode
    /// and flags.
    pub hash: String,
}

impl CpuKey {
    /// The key of the processor this process runs on.
    ///
    /// ```
    /// use gaspar::copy_engine::CpuKey;
    /// assert_eq!(CpuKey::current(), CpuKey::current()); // stable on one machine
    /// ```
    pub fn current() -> CpuKey {
        use std::io::Read;
        // The first processor's block is all the key needs: on a machine of hundreds of
        // cores the whole file is large, and every rank reads it at start-up.
        let mut bytes = Vec::new();
        if let Ok(file) = std::fs::File::open("/proc/cpuinfo") {
            let _ = file.take(64 << 10).read_to_end(&mut bytes);
        }
        let cpuinfo = String::from_utf8_lossy(&bytes);
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        CpuKey::from_cpuinfo(&cpuinfo, host.trim())
    }

    /// The key from the text of `/proc/cpuinfo` (its first processor) and a host name.
    pub(crate) fn from_cpuinfo(cpuinfo: &str, host: &str) -> CpuKey {
        const FIELDS: [&str; 11] = [
            "vendor_id",
            "cpu family",
            "model",
            "model name",
            "stepping",
            "microcode",
            "flags",
            "CPU implementer",
            "CPU part",
            "CPU revision",
            "Features",
        ];
        let first = cpuinfo.split("\n\n").next().unwrap_or("");
        let field = |name: &str| {
            first.lines().find_map(|line| {
                let (key, value) = line.split_once(':')?;
                (key.trim() == name).then(|| value.trim().to_string())
            })
        };
        let mut hash = Fnv::new();
        // A new gaspar may copy and measure differently.
        hash.add(env!("CARGO_PKG_VERSION"));
        hash.add(host);
        for name in FIELDS {
            hash.add(name);
            hash.add(&field(name).unwrap_or_default());
        }
        CpuKey {
            model: field("model name")
                .or_else(|| field("CPU part").map(|part| format!("CPU part {part}")))
                .unwrap_or_else(|| "unknown processor".into()),
            hash: format!("{:016x}", hash.0),
        }
    }
}

/// FNV-1a, 64 bits: a hash that stays the same across builds and Rust versions.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    /// Adds `text` and a separator.
    fn add(&mut self, text: &str) {
        for b in text.bytes().chain([0]) {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The directory of gaspar's cache: `$XDG_CACHE_HOME/gaspar`, else `$HOME/.cache/gaspar`;
/// `None` when neither is set to an absolute path.
pub(crate) fn cache_dir() -> Option<PathBuf> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute("XDG_CACHE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".cache")))
        .map(|dir| dir.join("gaspar"))
}

/// The table file in `dir`, one per host (a home directory may be shared by machines)
/// and per build profile (the inline routines of a debug build are slower, so that a
/// debug build's choices would be wrong for an optimized one).
pub(crate) fn table_path(dir: &Path) -> PathBuf {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host: String = host
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    dir.join(format!("copy-table-{host}-{profile}.txt"))
}

/// What reading the cache file found.
#[derive(Debug)]
pub(crate) enum Cached {
    /// A table measured on this machine and processor.
    Valid(Box<MethodTable>),
    /// No file.
    Missing,
    /// A table measured elsewhere (another processor, microcode or machine).
    Stale,
    /// A file that cannot be read or does not parse; the reason.
    Unusable(String),
}

/// Reads the table at `path`, valid only for `key`.
pub(crate) fn read(path: &Path, key: &CpuKey) -> Cached {
    // A table is a few KiB: anything that is not a regular file of modest size (a FIFO,
    // a link to a device) is refused before it is opened, which could block or never end.
    const LARGEST: u64 = 1 << 20;
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => {
            return Cached::Unusable(format!("{} is not a file", path.display()))
        }
        Ok(m) if m.len() > LARGEST => {
            return Cached::Unusable(format!("{} has {} bytes", path.display(), m.len()))
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Cached::Missing,
        Err(e) => return Cached::Unusable(format!("{}: {e}", path.display())),
    }
    let text = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Cached::Missing,
        Err(e) => return Cached::Unusable(format!("{}: {e}", path.display())),
    };
    let Ok(text) = String::from_utf8(text) else {
        return Cached::Unusable("not text".into());
    };
    let mut parts = text.splitn(4, '\n');
    let (Some(magic), Some(hash), Some(_model), Some(table)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Cached::Unusable("truncated".into());
    };
    if magic != MAGIC {
        return Cached::Unusable("not a gaspar copy table of this version".into());
    }
    if hash.strip_prefix("key ") != Some(key.hash.as_str()) {
        return Cached::Stale;
    }
    match MethodTable::parse(table) {
        Some(table) => Cached::Valid(Box::new(table)),
        None => Cached::Unusable("the table does not parse".into()),
    }
}

/// Writes `table` for `key` to `path` (creating its directory), through a temporary file
/// renamed into place, so that a reader never sees half a table.
pub(crate) fn write(path: &Path, key: &CpuKey, table: &MethodTable) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = format!(
        "{MAGIC}\nkey {}\ncpu {}\n{}",
        key.hash,
        key.model.replace('\n', " "),
        table.to_text()
    );
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temporary);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::shm::copy::kernels::Method;
    use crate::transport::shm::copy::table::{Choice, Placement};

    const EPYC: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n\
        model\t\t: 1\nmodel name\t: AMD EPYC\nstepping\t: 1\nmicrocode\t: 0xa0011d1\n\
        flags\t\t: fpu sse2 avx2 erms fsrm\n\nprocessor\t: 1\nmodel name\t: other\n";

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("gaspar-cache-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn sample_table() -> MethodTable {
        let mut table = MethodTable::default();
        table.set(
            3,
            Placement::BehindOdd,
            Choice {
                method: Method::Inline16,
                speedup: 1.5,
            },
        );
        table
    }

    #[test]
    fn the_key_follows_processor_microcode_flags_and_host() {
        let key = CpuKey::from_cpuinfo(EPYC, "node1");
        assert_eq!(key.model, "AMD EPYC");
        assert_eq!(key, CpuKey::from_cpuinfo(EPYC, "node1"));
        for changed in [
            CpuKey::from_cpuinfo(&EPYC.replace("0xa0011d1", "0xa0011d5"), "node1"),
            CpuKey::from_cpuinfo(&EPYC.replace(" fsrm", ""), "node1"),
            CpuKey::from_cpuinfo(&EPYC.replace("AMD EPYC", "Intel Xeon"), "node1"),
            CpuKey::from_cpuinfo(EPYC, "node2"),
        ] {
            assert_ne!(changed.hash, key.hash);
        }
        // Only the first processor counts.
        assert_eq!(
            CpuKey::from_cpuinfo(&EPYC.replace("model name\t: other", "x"), "node1"),
            key
        );
    }

    #[test]
    fn a_table_is_read_back_only_under_its_key() {
        let dir = scratch("key");
        let path = table_path(&dir);
        let key = CpuKey::from_cpuinfo(EPYC, "node1");
        assert!(matches!(read(&path, &key), Cached::Missing));
        write(&path, &key, &sample_table()).expect("write");
        match read(&path, &key) {
            Cached::Valid(table) => assert_eq!(*table, sample_table()),
            other => panic!("expected the table back, got {other:?}"),
        }
        let new_microcode = CpuKey::from_cpuinfo(&EPYC.replace("0xa0011d1", "0xb"), "node1");
        assert!(matches!(read(&path, &new_microcode), Cached::Stale));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn corrupt_files_are_unusable_not_fatal() {
        let dir = scratch("corrupt");
        let path = table_path(&dir);
        let key = CpuKey::from_cpuinfo(EPYC, "node1");
        write(&path, &key, &sample_table()).expect("write");
        let good = std::fs::read(&path).expect("read");
        let mut damaged: Vec<Vec<u8>> = vec![
            Vec::new(),
            vec![0xff, 0xfe, 0x00],
            good[..good.len() / 2].to_vec(),
            String::from_utf8(good.clone())
                .expect("text")
                .replace("inline16", "warp-drive")
                .into_bytes(),
            String::from_utf8(good.clone())
                .expect("text")
                .replace(MAGIC, "gaspar copy table v3")
                .into_bytes(),
        ];
        damaged.push(good.iter().map(|b| b.wrapping_add(1)).collect());
        for bytes in damaged {
            std::fs::write(&path, &bytes).expect("damage");
            assert!(
                matches!(read(&path, &key), Cached::Unusable(_)),
                "{:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
        // A directory where the file should be.
        std::fs::remove_file(&path).expect("remove");
        std::fs::create_dir(&path).expect("mkdir");
        assert!(matches!(read(&path, &key), Cached::Unusable(_)));
        // A FIFO (opening it would wait for a writer) and a link to an endless device.
        std::fs::remove_dir(&path).expect("rmdir");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        assert!(matches!(read(&path, &key), Cached::Unusable(_)));
        std::fs::remove_file(&path).expect("remove the fifo");
        std::os::unix::fs::symlink("/dev/zero", &path).expect("symlink");
        assert!(matches!(read(&path, &key), Cached::Unusable(_)));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
