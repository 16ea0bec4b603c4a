//! The simulated disk: an in-memory, seeded [`Disk`] for crash and model tests.
//!
//! # What it models
//!
//! - **Per-file durability.** Each file has its visible bytes (what reads and `size()` see), its
//!   durable bytes (what survives power loss) and the writes made since its last `fdatasync`.
//!   An `fdatasync` makes durable exactly the writes that had completed when it was called; a
//!   write that completes while the flush is in flight stays unsynced, as on a real device.
//! - **Power loss** ([`SimDisk::crash`]). Every unsynced write of a file is kept or lost by a
//!   seeded coin flip, independently of the others (page-cache writeback does not preserve order),
//!   and the last kept one may be torn: only a prefix of its bytes, from none to all of them, lands,
//!   and after a torn prefix the sectors being written may hold garbage (random bytes, for a
//!   random length up to the rest of the write).
//!   [`SimDisk::crash_losing_all_unsynced`] is the deterministic worst case.
//! - **Namespace durability.** Creations, renames and removals change the visible namespace at
//!   once but become durable only when `sync_dir` is called on the parent directory. On a crash,
//!   each name whose mapping changed since its directory was synced independently keeps its new
//!   mapping or reverts. Names are independent even when one rename changed both, so after a crash
//!   an unsynced rename may leave the file under both names or, if the target did not exist
//!   durably and the source had been synced, under neither.
//! - **Linux handle semantics.** A handle to a removed or renamed file keeps working until the
//!   crash; after a crash every older handle is stale and all its operations fail.
//! - **O_DIRECT rules.** Writes must have an aligned offset and length
//!   ([`DMA_ALIGN_BYTES`]); reads may have any alignment and are short at end of file.
//! - **I/O errors.** Reads (including `map`), writes and syncs (`fdatasync` and `sync_dir`) fail
//!   with a configured per-million probability or once on demand ([`SimDisk::fail_next`]). A failed
//!   write leaves the file unchanged; a failed sync makes nothing durable and leaves the unsynced
//!   writes pending (unlike Linux, which may drop dirty pages after a failed fsync).
//! - **Interleaving.** Every operation yields to the executor once before it takes effect, so
//!   concurrent tasks interleave as they would around real I/O. It uses no glommio, so any
//!   executor can drive it.
//!
//! # What it does not model
//!
//! - Any ordering between files beyond their independence: a crash may keep a later write to one
//!   file and lose an earlier write to another, and nothing stronger is promised either way.
//! - Silent corruption on its own: no bit rot and no phantom writes. Tests that want corruption
//!   call [`SimDisk::set_file_bytes`], and [`SimDisk::misdirect_next_write`] puts the next write
//!   at another offset of its file while reporting success.
//! - Directory durability: `create_dir_all` is durable at once, and directories are never removed.
//! - Space, permissions, latency and timing: a disk never fills (files are capped at
//!   [`SIM_FILE_BYTES_MAX`] only so a wild offset cannot exhaust memory), and nothing takes time.
//! - Live maps: [`SimMap`] is a snapshot of the file when it was mapped.
//!
//! Determinism: the same seed and the same sequence of calls give the same outcome. All state is
//! kept in ordered maps so that a crash consumes the random stream in a fixed order.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use futures_lite::future::yield_now;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{Disk, DiskFile};
use crate::constants::DMA_ALIGN_BYTES;

/// Largest simulated file. The store's files are far smaller; the cap exists so that a bad offset
/// returns an error instead of trying to allocate the address space.
pub const SIM_FILE_BYTES_MAX: u64 = 1 << 32;

/// How a [`SimDisk`] is seeded and how often it injects I/O errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimConfig {
    /// Seeds every random choice: injected faults and crash outcomes.
    pub seed: u64,
    /// Probability, per million reads (`read_at` and `map`), that a read fails.
    pub read_error_per_million: u32,
    /// Probability, per million writes, that a write fails (leaving the file unchanged).
    pub write_error_per_million: u32,
    /// Probability, per million syncs (`fdatasync` and `sync_dir`), that a sync fails.
    pub fsync_error_per_million: u32,
}

impl SimConfig {
    /// A disk with the given seed that never injects faults.
    pub fn new(seed: u64) -> Self {
        SimConfig {
            seed,
            read_error_per_million: 0,
            write_error_per_million: 0,
            fsync_error_per_million: 0,
        }
    }
}

/// A kind of operation that can be made to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimOp {
    /// `read_at` and `map`.
    Read,
    /// `write_at`.
    Write,
    /// `fdatasync` and `sync_dir`.
    Fsync,
}

impl SimOp {
    fn index(self) -> usize {
        match self {
            SimOp::Read => 0,
            SimOp::Write => 1,
            SimOp::Fsync => 2,
        }
    }
}

/// Counters of completed operations. Failed operations count only in `injected_faults`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Successful `write_at` calls.
    pub writes: u64,
    /// Successful `fdatasync` calls.
    pub fsyncs: u64,
    /// Successful `sync_dir` calls.
    pub dir_syncs: u64,
    /// Successful `read_at` and `map` calls.
    pub reads: u64,
    /// Operations failed on purpose, by probability or by [`SimDisk::fail_next`].
    pub injected_faults: u64,
    /// Calls to [`SimDisk::crash`] and [`SimDisk::crash_losing_all_unsynced`].
    pub crashes: u64,
}

/// The in-memory disk. Clones share one state, like handles to one machine's file system.
#[derive(Clone, Debug)]
pub struct SimDisk {
    state: Rc<RefCell<State>>,
}

/// A read-only snapshot of a whole file, taken when it was mapped.
#[derive(Debug, Clone)]
pub struct SimMap {
    bytes: Rc<[u8]>,
}

impl Deref for SimMap {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

/// An open simulated file. It becomes stale, and every operation on it fails, after a crash.
#[derive(Debug)]
pub struct SimFile {
    disk: SimDisk,
    id: FileId,
    /// The crash count when the handle was opened; a different current count means it is stale.
    epoch: u64,
}

type FileId = u64;

/// A write that completed but is not yet covered by an `fdatasync`.
struct PendingWrite {
    /// Per-file sequence number, so a sync covers only the writes completed before it was called.
    seq: u64,
    pos: usize,
    bytes: Vec<u8>,
}

/// One file's contents. Invariant: `durable` with every `pending` write applied in order equals
/// `visible`, so a sync only has to apply the pending writes to `durable`.
#[derive(Default)]
struct FileData {
    visible: Vec<u8>,
    durable: Vec<u8>,
    pending: Vec<PendingWrite>,
    next_seq: u64,
    /// Open, non-stale handles; a file no name and no handle refers to is freed.
    handles: usize,
}

struct State {
    rng: StdRng,
    faults_per_million: [u32; 3],
    fail_next: [bool; 3],
    /// The next write lands this many bytes away from where it was aimed (a misdirected write).
    misdirect_next: Option<i64>,
    epoch: u64,
    next_id: FileId,
    files: BTreeMap<FileId, FileData>,
    /// The visible namespace: full path to file.
    names: BTreeMap<PathBuf, FileId>,
    /// The namespace as of each directory's last `sync_dir`, kept by full path.
    durable_names: BTreeMap<PathBuf, FileId>,
    dirs: BTreeSet<PathBuf>,
    stats: SimStats,
}

impl fmt::Debug for State {
    // File contents can be megabytes, so the state prints only its shape.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("State")
            .field("epoch", &self.epoch)
            .field("files", &self.files.len())
            .field("names", &self.names.keys().collect::<Vec<_>>())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

fn stale() -> io::Error {
    io::Error::other("stale handle: the simulated machine crashed")
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("simulated disk: no file at {}", path.display()),
    )
}

fn no_dir(dir: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("simulated disk: directory {} does not exist", dir.display()),
    )
}

/// Copies `data` into `bytes` at `pos`, zero-filling any gap past the end.
fn apply_write(bytes: &mut Vec<u8>, pos: usize, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let end = pos + data.len();
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[pos..end].copy_from_slice(data);
}

/// Checks a write the way O_DIRECT does and returns its start offset in memory.
#[allow(
    clippy::manual_is_multiple_of,
    reason = "u64::is_multiple_of needs Rust 1.87 and the workspace's rust-version is 1.85"
)]
fn check_write(pos: u64, len: usize) -> io::Result<usize> {
    let len = len as u64;
    if pos % DMA_ALIGN_BYTES != 0 || len % DMA_ALIGN_BYTES != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "unaligned direct write: {len} bytes at offset {pos} (alignment {DMA_ALIGN_BYTES})"
            ),
        ));
    }
    match pos.checked_add(len) {
        Some(end) if end <= SIM_FILE_BYTES_MAX => Ok(pos as usize),
        _ => Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("write of {len} bytes at {pos} passes the simulated {SIM_FILE_BYTES_MAX} byte limit"),
        )),
    }
}

/// True for paths whose parent needs no `create_dir_all`: relative names and the root.
fn is_implicit_dir(dir: &Path) -> bool {
    dir.as_os_str().is_empty() || dir.parent().is_none()
}

impl State {
    fn new(config: SimConfig) -> Self {
        State {
            rng: StdRng::seed_from_u64(config.seed),
            faults_per_million: [
                config.read_error_per_million,
                config.write_error_per_million,
                config.fsync_error_per_million,
            ],
            fail_next: [false; 3],
            misdirect_next: None,
            epoch: 0,
            next_id: 0,
            files: BTreeMap::new(),
            names: BTreeMap::new(),
            durable_names: BTreeMap::new(),
            dirs: BTreeSet::new(),
            stats: SimStats::default(),
        }
    }

    fn dir_exists(&self, dir: &Path) -> bool {
        is_implicit_dir(dir) || self.dirs.contains(dir)
    }

    fn check_parent(&self, path: &Path) -> io::Result<()> {
        match path.parent() {
            Some(dir) if !self.dir_exists(dir) => Err(no_dir(dir)),
            _ => Ok(()),
        }
    }

    /// Fails the operation if a `fail_next` is armed for it or the seeded coin says so.
    fn inject(&mut self, op: SimOp) -> io::Result<()> {
        let i = op.index();
        let per_million = self.faults_per_million[i];
        let armed = std::mem::take(&mut self.fail_next[i]);
        // The generator is consulted only when faults are enabled, so enabling none leaves crash
        // outcomes independent of how many operations ran.
        if armed || (per_million > 0 && self.rng.gen_range(0..1_000_000u32) < per_million) {
            self.stats.injected_faults += 1;
            return Err(io::Error::other(format!("injected {op:?} fault (simulated disk)")));
        }
        Ok(())
    }

    fn live_file(&mut self, id: FileId, epoch: u64) -> io::Result<&mut FileData> {
        if epoch != self.epoch {
            return Err(stale());
        }
        self.files.get_mut(&id).ok_or_else(stale)
    }

    fn lookup(&self, path: &Path) -> io::Result<FileId> {
        self.names.get(path).copied().ok_or_else(|| not_found(path))
    }

    /// Registers a new handle to `id` and returns the epoch it belongs to.
    fn open_handle(&mut self, id: FileId) -> u64 {
        if let Some(file) = self.files.get_mut(&id) {
            file.handles += 1;
        }
        self.epoch
    }

    fn release(&mut self, id: FileId, epoch: u64) {
        // Stale handles were already forgotten by the crash that made them stale.
        if epoch != self.epoch {
            return;
        }
        if let Some(file) = self.files.get_mut(&id) {
            file.handles = file.handles.saturating_sub(1);
        }
        self.collect(id);
    }

    /// Frees a file that no name (visible or durable) and no handle can reach any more.
    fn collect(&mut self, id: FileId) {
        let referenced = |names: &BTreeMap<PathBuf, FileId>| names.values().any(|&v| v == id);
        let open = self.files.get(&id).is_some_and(|f| f.handles > 0);
        if !open && !referenced(&self.names) && !referenced(&self.durable_names) {
            self.files.remove(&id);
        }
    }

    fn create(&mut self, path: &Path) -> io::Result<(FileId, u64)> {
        if self.names.contains_key(path) || self.dirs.contains(path) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("simulated disk: {} already exists", path.display()),
            ));
        }
        self.check_parent(path)?;
        let id = self.next_id;
        self.next_id += 1;
        self.files.insert(id, FileData::default());
        self.names.insert(path.to_path_buf(), id);
        Ok((id, self.open_handle(id)))
    }

    fn remove(&mut self, path: &Path) -> io::Result<()> {
        let id = self.names.remove(path).ok_or_else(|| not_found(path))?;
        self.collect(id);
        Ok(())
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        let id = self.lookup(from)?;
        self.check_parent(to)?;
        if self.dirs.contains(to) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("simulated disk: cannot rename over directory {}", to.display()),
            ));
        }
        // POSIX: renaming a name onto a name of the same file does nothing.
        if self.names.get(to) == Some(&id) {
            return Ok(());
        }
        self.names.remove(from);
        if let Some(replaced) = self.names.insert(to.to_path_buf(), id) {
            self.collect(replaced);
        }
        Ok(())
    }

    fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        if !self.dir_exists(dir) {
            return Err(no_dir(dir));
        }
        self.inject(SimOp::Fsync)?;
        let in_dir = |p: &&PathBuf| p.parent() == Some(dir);
        let paths: BTreeSet<PathBuf> =
            self.names.keys().chain(self.durable_names.keys()).filter(in_dir).cloned().collect();
        let mut dropped = Vec::new();
        for path in paths {
            let old = match self.names.get(&path) {
                Some(&id) => self.durable_names.insert(path, id),
                None => self.durable_names.remove(&path),
            };
            dropped.extend(old);
        }
        for id in dropped {
            self.collect(id);
        }
        self.stats.dir_syncs += 1;
        Ok(())
    }

    fn create_dir_all(&mut self, dir: &Path) -> io::Result<()> {
        if let Some(file) = dir.ancestors().find(|a| self.names.contains_key(*a)) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("simulated disk: {} is a file, not a directory", file.display()),
            ));
        }
        for ancestor in dir.ancestors().filter(|a| !is_implicit_dir(a)) {
            self.dirs.insert(ancestor.to_path_buf());
        }
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        if !self.dir_exists(dir) {
            return Err(no_dir(dir));
        }
        let names = self.names.keys().filter(|p| p.parent() == Some(dir));
        Ok(names.filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).collect())
    }

    fn map(&mut self, path: &Path) -> io::Result<SimMap> {
        let id = self.lookup(path)?;
        self.inject(SimOp::Read)?;
        let file = self.files.get(&id).ok_or_else(|| not_found(path))?;
        let bytes = Rc::from(file.visible.as_slice());
        self.stats.reads += 1;
        Ok(SimMap { bytes })
    }

    fn write(&mut self, id: FileId, epoch: u64, pos: u64, bytes: Vec<u8>) -> io::Result<()> {
        self.live_file(id, epoch)?;
        let pos = match self.misdirect_next.take() {
            // The device reports success for a write it put elsewhere in the file.
            Some(shift) => pos.saturating_add_signed(shift),
            None => pos,
        };
        let pos = check_write(pos, bytes.len())?;
        self.inject(SimOp::Write)?;
        let file = self.live_file(id, epoch)?;
        // A zero-length write changes nothing, so it leaves nothing to lose or sync.
        if !bytes.is_empty() {
            apply_write(&mut file.visible, pos, &bytes);
            let seq = file.next_seq;
            file.next_seq += 1;
            file.pending.push(PendingWrite { seq, pos, bytes });
        }
        self.stats.writes += 1;
        Ok(())
    }

    fn read(&mut self, id: FileId, epoch: u64, pos: u64, len: usize) -> io::Result<Vec<u8>> {
        self.live_file(id, epoch)?;
        self.inject(SimOp::Read)?;
        let visible = &self.live_file(id, epoch)?.visible;
        let start = usize::try_from(pos).unwrap_or(usize::MAX).min(visible.len());
        let end = start.saturating_add(len).min(visible.len());
        let bytes = visible[start..end].to_vec();
        self.stats.reads += 1;
        Ok(bytes)
    }

    /// The sequence number below which writes had completed: what an `fdatasync` called now covers.
    fn sync_point(&self, id: FileId, epoch: u64) -> u64 {
        match self.files.get(&id) {
            Some(file) if epoch == self.epoch => file.next_seq,
            _ => 0,
        }
    }

    fn fdatasync(&mut self, id: FileId, epoch: u64, sync_point: u64) -> io::Result<()> {
        self.live_file(id, epoch)?;
        self.inject(SimOp::Fsync)?;
        let file = self.live_file(id, epoch)?;
        let covered = file.pending.iter().take_while(|w| w.seq < sync_point).count();
        for write in file.pending.drain(..covered) {
            apply_write(&mut file.durable, write.pos, &write.bytes);
        }
        debug_assert!(!file.pending.is_empty() || file.durable.len() == file.visible.len());
        self.stats.fsyncs += 1;
        Ok(())
    }

    /// Shrinks a fully synced file; the new size is durable at once (a real crash leaves either
    /// size, which read the same up to `len`).
    fn truncate(&mut self, id: FileId, epoch: u64, len: u64) -> io::Result<()> {
        self.live_file(id, epoch)?;
        self.inject(SimOp::Fsync)?;
        let file = self.live_file(id, epoch)?;
        if !file.pending.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("truncate with {} unsynced writes", file.pending.len()),
            ));
        }
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        file.visible.truncate(len);
        file.durable.truncate(len);
        Ok(())
    }

    fn size(&mut self, id: FileId, epoch: u64) -> io::Result<u64> {
        Ok(self.live_file(id, epoch)?.visible.len() as u64)
    }

    /// Decides, name by name, whether an unsynced namespace change survives a crash.
    fn crash_namespace(&mut self) {
        let paths: BTreeSet<PathBuf> =
            self.names.keys().chain(self.durable_names.keys()).cloned().collect();
        for path in paths {
            let durable = self.durable_names.get(&path).copied();
            if self.names.get(&path).copied() == durable || self.rng.gen_bool(0.5) {
                continue;
            }
            match durable {
                Some(id) => self.names.insert(path, id),
                None => self.names.remove(&path),
            };
        }
        self.durable_names = self.names.clone();
    }

    /// Reboots the namespace once it has been decided: files it cannot reach are freed (before
    /// their contents are decided, to save the work) and every older handle becomes stale.
    fn finish_crash(&mut self) {
        let reachable: BTreeSet<FileId> = self.names.values().copied().collect();
        self.files.retain(|id, _| reachable.contains(id));
        for file in self.files.values_mut() {
            file.handles = 0;
        }
        self.epoch += 1;
        self.stats.crashes += 1;
    }

    fn crash(&mut self) {
        self.crash_namespace();
        self.finish_crash();
        for file in self.files.values_mut() {
            let bytes = reboot_bytes(file, &mut self.rng);
            file.visible = bytes.clone();
            file.durable = bytes;
        }
    }

    fn crash_losing_all_unsynced(&mut self) {
        self.names = self.durable_names.clone();
        self.finish_crash();
        for file in self.files.values_mut() {
            file.pending.clear();
            file.visible = file.durable.clone();
        }
    }

    fn set_file_bytes(&mut self, path: &Path, bytes: Vec<u8>) {
        if let Some(file) = self.names.get(path).and_then(|id| self.files.get_mut(id)) {
            file.pending.clear();
            file.visible = bytes.clone();
            file.durable = bytes;
            return;
        }
        // A test planting a new file wants it to exist after any crash, so its name is durable.
        let id = self.next_id;
        self.next_id += 1;
        let file = FileData { visible: bytes.clone(), durable: bytes, ..FileData::default() };
        self.files.insert(id, file);
        self.names.insert(path.to_path_buf(), id);
        if let Some(old) = self.durable_names.insert(path.to_path_buf(), id) {
            self.collect(old);
        }
        if let Some(dir) = path.parent() {
            self.dirs
                .extend(dir.ancestors().filter(|a| !is_implicit_dir(a)).map(Path::to_path_buf));
        }
    }
}

/// The bytes a reboot finds in `file`: its durable bytes plus a random subset of its unsynced
/// writes, in order, the last of which may be torn to a prefix of any length; half of the torn
/// ones are also garbled: a random-length run of random bytes follows the prefix that landed
/// (a device that lost power mid-transfer can leave anything in the sectors it was writing).
fn reboot_bytes(file: &mut FileData, rng: &mut StdRng) -> Vec<u8> {
    let mut bytes = std::mem::take(&mut file.durable);
    let kept: Vec<PendingWrite> = file.pending.drain(..).filter(|_| rng.gen_bool(0.5)).collect();
    let Some((last, earlier)) = kept.split_last() else {
        return bytes;
    };
    for write in earlier {
        apply_write(&mut bytes, write.pos, &write.bytes);
    }
    let torn = rng.gen_bool(0.5);
    let landed = if torn { rng.gen_range(0..=last.bytes.len()) } else { last.bytes.len() };
    apply_write(&mut bytes, last.pos, &last.bytes[..landed]);
    if torn && rng.gen_bool(0.5) {
        let garbage_len = rng.gen_range(0..=last.bytes.len() - landed);
        let garbage: Vec<u8> = (0..garbage_len).map(|_| rng.gen()).collect();
        apply_write(&mut bytes, last.pos + landed, &garbage);
    }
    bytes
}

impl SimDisk {
    pub fn new(config: SimConfig) -> Self {
        SimDisk { state: Rc::new(RefCell::new(State::new(config))) }
    }

    /// Simulated power loss with seeded outcomes; see the module documentation.
    pub fn crash(&self) {
        self.state.borrow_mut().crash();
    }

    /// The worst case power loss: every unsynced write and namespace change is lost.
    pub fn crash_losing_all_unsynced(&self) {
        self.state.borrow_mut().crash_losing_all_unsynced();
    }

    /// Changes the per-million fault probabilities of reads, writes and syncs.
    pub fn set_faults(
        &self,
        read_per_million: u32,
        write_per_million: u32,
        fsync_per_million: u32,
    ) {
        self.state.borrow_mut().faults_per_million =
            [read_per_million, write_per_million, fsync_per_million];
    }

    /// Makes the next write (to any file) land `shift` bytes away from its position, while
    /// reporting success: a misdirected write. `shift` should keep the O_DIRECT alignment.
    pub fn misdirect_next_write(&self, shift: i64) {
        self.state.borrow_mut().misdirect_next = Some(shift);
    }

    /// Makes the next operation of kind `op` fail once, whatever the probabilities say.
    pub fn fail_next(&self, op: SimOp) {
        self.state.borrow_mut().fail_next[op.index()] = true;
    }

    /// The visible bytes of the file at `path`, if there is one.
    pub fn file_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.state.borrow();
        state.names.get(path).and_then(|id| state.files.get(id)).map(|f| f.visible.clone())
    }

    /// Replaces the file's visible and durable bytes and forgets its unsynced writes. If there is
    /// no file at `path`, one is created with a durable name (and its parent directories).
    pub fn set_file_bytes(&self, path: &Path, bytes: Vec<u8>) {
        self.state.borrow_mut().set_file_bytes(path, bytes);
    }

    /// How many writes to the file at `path` are not yet covered by an `fdatasync` (0 if absent).
    pub fn unsynced_writes(&self, path: &Path) -> usize {
        let state = self.state.borrow();
        state.names.get(path).and_then(|id| state.files.get(id)).map_or(0, |f| f.pending.len())
    }

    /// Every visible file path, sorted.
    pub fn file_names(&self) -> Vec<PathBuf> {
        self.state.borrow().names.keys().cloned().collect()
    }

    pub fn stats(&self) -> SimStats {
        self.state.borrow().stats
    }

    fn handle(&self, id: FileId, epoch: u64) -> SimFile {
        SimFile { disk: self.clone(), id, epoch }
    }
}

impl Disk for SimDisk {
    type File = SimFile;
    type Map = SimMap;

    async fn create(&self, path: &Path) -> io::Result<SimFile> {
        yield_now().await;
        let (id, epoch) = self.state.borrow_mut().create(path)?;
        Ok(self.handle(id, epoch))
    }

    async fn open(&self, path: &Path) -> io::Result<SimFile> {
        yield_now().await;
        let mut state = self.state.borrow_mut();
        let id = state.lookup(path)?;
        let epoch = state.open_handle(id);
        Ok(self.handle(id, epoch))
    }

    async fn map(&self, path: &Path) -> io::Result<SimMap> {
        yield_now().await;
        self.state.borrow_mut().map(path)
    }

    async fn remove(&self, path: &Path) -> io::Result<()> {
        yield_now().await;
        self.state.borrow_mut().remove(path)
    }

    async fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        yield_now().await;
        self.state.borrow_mut().rename(from, to)
    }

    async fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        yield_now().await;
        self.state.borrow_mut().sync_dir(dir)
    }

    async fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        yield_now().await;
        self.state.borrow_mut().create_dir_all(dir)
    }

    async fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        yield_now().await;
        self.state.borrow().list_dir(dir)
    }
}

impl DiskFile for SimFile {
    type Buf = Vec<u8>;
    type ReadBuf = Vec<u8>;

    fn alloc_buf(&self, len: usize) -> Vec<u8> {
        vec![0; len]
    }

    async fn write_at(&self, buf: Vec<u8>, pos: u64) -> io::Result<()> {
        yield_now().await;
        self.disk.state.borrow_mut().write(self.id, self.epoch, pos, buf)
    }

    async fn read_at(&self, pos: u64, len: usize) -> io::Result<Vec<u8>> {
        yield_now().await;
        self.disk.state.borrow_mut().read(self.id, self.epoch, pos, len)
    }

    async fn fdatasync(&self) -> io::Result<()> {
        // The sync covers the writes completed when it was issued, not those completing while it
        // is in flight: a group commit that acknowledges the latter without another sync is a bug.
        let sync_point = self.disk.state.borrow().sync_point(self.id, self.epoch);
        yield_now().await;
        self.disk.state.borrow_mut().fdatasync(self.id, self.epoch, sync_point)
    }

    async fn size(&self) -> io::Result<u64> {
        yield_now().await;
        self.disk.state.borrow_mut().size(self.id, self.epoch)
    }

    async fn truncate(&self, len: u64) -> io::Result<()> {
        yield_now().await;
        self.disk.state.borrow_mut().truncate(self.id, self.epoch, len)
    }
}

impl Drop for SimFile {
    fn drop(&mut self) {
        // The state is never borrowed while a handle is dropped; if it ever were, skipping the
        // release only keeps a closed file's bytes in memory until the next crash.
        if let Ok(mut state) = self.disk.state.try_borrow_mut() {
            state.release(self.id, self.epoch);
        }
    }
}

#[cfg(test)]
mod tests {
    //! These tests prove the simulator's promises to the crash and model tests: what a sync makes
    //! durable survives every crash, what it does not may vanish or tear, the namespace follows
    //! `sync_dir`, and the O_DIRECT and handle rules hold. They run under `block_on`, so no glommio.

    use futures_lite::future::{block_on, zip};

    use super::*;

    const BLOCK: usize = DMA_ALIGN_BYTES as usize;

    fn dir() -> &'static Path {
        Path::new("/db")
    }

    fn path(name: &str) -> PathBuf {
        dir().join(name)
    }

    async fn disk_with_dir(seed: u64) -> io::Result<SimDisk> {
        let disk = SimDisk::new(SimConfig::new(seed));
        disk.create_dir_all(dir()).await?;
        Ok(disk)
    }

    async fn write_block(file: &SimFile, index: u64, fill: u8) -> io::Result<()> {
        let mut buf = file.alloc_buf(BLOCK);
        buf.fill(fill);
        file.write_at(buf, index * DMA_ALIGN_BYTES).await
    }

    /// A durably named file of `blocks` zero blocks, then one unsynced write of `fill` per block.
    async fn file_with_unsynced_blocks(disk: &SimDisk, blocks: u64) -> io::Result<SimFile> {
        let file = disk.create(&path("seg")).await?;
        file.write_at(file.alloc_buf(BLOCK * blocks as usize), 0).await?;
        file.fdatasync().await?;
        disk.sync_dir(dir()).await?;
        for index in 0..blocks {
            write_block(&file, index, index as u8 + 1).await?;
        }
        Ok(file)
    }

    #[derive(Debug, Default)]
    struct Outcomes {
        kept: usize,
        lost: usize,
        torn: usize,
        garbled: usize,
    }

    /// Classifies each block after a crash: all new bytes, all old (zero) bytes, a new prefix,
    /// or a new prefix followed by garbage (other bytes, then zeros).
    fn classify(bytes: &[u8], outcomes: &mut Outcomes) {
        for (index, block) in bytes.chunks(BLOCK).enumerate() {
            let fill = index as u8 + 1;
            let prefix = block.iter().take_while(|&&b| b == fill).count();
            match prefix {
                _ if block[prefix..].iter().any(|&b| b != 0) => outcomes.garbled += 1,
                0 => outcomes.lost += 1,
                p if p == BLOCK => outcomes.kept += 1,
                _ => outcomes.torn += 1,
            }
        }
    }

    #[test]
    fn synced_data_survives_and_unsynced_data_is_lost() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(1).await?;
            let file = disk.create(&path("a")).await?;
            write_block(&file, 0, 7).await?;
            file.fdatasync().await?;
            disk.sync_dir(dir()).await?;
            write_block(&file, 0, 8).await?;
            write_block(&file, 1, 9).await?;
            assert_eq!(disk.unsynced_writes(&path("a")), 2);
            disk.crash_losing_all_unsynced();
            assert_eq!(disk.file_bytes(&path("a")), Some(vec![7; BLOCK]));
            assert_eq!(disk.unsynced_writes(&path("a")), 0);
            let reopened = disk.open(&path("a")).await?;
            assert_eq!(reopened.size().await?, DMA_ALIGN_BYTES);
            Ok(())
        })
    }

    #[test]
    fn unsynced_create_vanishes_and_synced_create_stays() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(2).await?;
            disk.create(&path("kept")).await?;
            disk.sync_dir(dir()).await?;
            disk.create(&path("lost")).await?;
            disk.crash_losing_all_unsynced();
            assert_eq!(disk.file_names(), vec![path("kept")]);
            assert_eq!(disk.list_dir(dir()).await?, vec!["kept".to_string()]);
            Ok(())
        })
    }

    #[test]
    fn rename_not_dir_synced_reverts() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(3).await?;
            disk.set_file_bytes(&path("old"), vec![1]);
            disk.set_file_bytes(&path("tmp"), vec![2]);
            disk.rename(&path("tmp"), &path("old")).await?;
            assert_eq!(disk.file_bytes(&path("old")), Some(vec![2]));
            assert_eq!(disk.file_bytes(&path("tmp")), None);
            disk.crash_losing_all_unsynced();
            assert_eq!(disk.file_bytes(&path("old")), Some(vec![1]));
            assert_eq!(disk.file_bytes(&path("tmp")), Some(vec![2]));
            disk.rename(&path("tmp"), &path("old")).await?;
            disk.sync_dir(dir()).await?;
            disk.crash_losing_all_unsynced();
            assert_eq!(disk.file_names(), vec![path("old")]);
            assert_eq!(disk.file_bytes(&path("old")), Some(vec![2]));
            Ok(())
        })
    }

    #[test]
    fn a_misdirected_write_lands_elsewhere_and_reports_success() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(5).await?;
            let file = disk.create(&path("m")).await?;
            file.write_at(file.alloc_buf(BLOCK * 3), 0).await?;
            disk.misdirect_next_write(2 * DMA_ALIGN_BYTES as i64);
            write_block(&file, 0, 9).await?;
            write_block(&file, 1, 8).await?;
            let bytes = disk.file_bytes(&path("m")).expect("file");
            assert_eq!(&bytes[..BLOCK], &[0; BLOCK][..], "block 0 never got its write");
            assert_eq!(&bytes[BLOCK..2 * BLOCK], &[8; BLOCK][..], "only the next write is moved");
            assert_eq!(&bytes[2 * BLOCK..], &[9; BLOCK][..], "block 0's write landed on block 2");
            Ok(())
        })
    }

    /// Runs one scenario with unsynced writes and namespace changes, crashes, and returns what a
    /// reboot sees.
    fn crash_scenario(seed: u64) -> io::Result<(Vec<PathBuf>, Vec<u8>)> {
        block_on(async {
            let disk = disk_with_dir(seed).await?;
            let _file = file_with_unsynced_blocks(&disk, 4).await?;
            disk.create(&path("new")).await?;
            disk.crash();
            let bytes = disk.file_bytes(&path("seg")).unwrap_or_default();
            Ok((disk.file_names(), bytes))
        })
    }

    #[test]
    fn crash_loses_and_tears_writes_across_seeds() -> io::Result<()> {
        let mut outcomes = Outcomes::default();
        let mut names_seen = BTreeSet::new();
        for seed in 0..32 {
            let (names, bytes) = crash_scenario(seed)?;
            assert_eq!(bytes.len(), 4 * BLOCK, "the synced length survives");
            classify(&bytes, &mut outcomes);
            names_seen.insert(names);
        }
        assert!(outcomes.kept > 0 && outcomes.lost > 0 && outcomes.torn > 0, "{outcomes:?}");
        assert!(outcomes.garbled > 0, "{outcomes:?}");
        assert_eq!(names_seen.len(), 2, "the unsynced create both survives and vanishes");
        Ok(())
    }

    #[test]
    fn crash_is_deterministic_for_a_seed() -> io::Result<()> {
        for seed in [5, 6, 7] {
            assert_eq!(crash_scenario(seed)?, crash_scenario(seed)?);
        }
        Ok(())
    }

    #[test]
    fn crash_outcome_becomes_durable() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(8).await?;
            let _file = file_with_unsynced_blocks(&disk, 4).await?;
            disk.crash();
            let names = disk.file_names();
            let bytes = disk.file_bytes(&path("seg"));
            disk.crash_losing_all_unsynced();
            assert_eq!((disk.file_names(), disk.file_bytes(&path("seg"))), (names, bytes));
            Ok(())
        })
    }

    #[test]
    fn unaligned_writes_are_rejected() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(9).await?;
            let file = disk.create(&path("a")).await?;
            let kind = |r: io::Result<()>| r.err().map(|e| e.kind());
            assert_eq!(
                kind(file.write_at(vec![1; 100], 0).await),
                Some(io::ErrorKind::InvalidInput)
            );
            assert_eq!(
                kind(file.write_at(vec![1; BLOCK], 8).await),
                Some(io::ErrorKind::InvalidInput)
            );
            let huge = file.write_at(vec![1; BLOCK], u64::MAX - DMA_ALIGN_BYTES + 1).await;
            assert_eq!(kind(huge), Some(io::ErrorKind::FileTooLarge));
            assert_eq!(file.size().await?, 0);
            assert_eq!(disk.stats().writes, 0);
            Ok(())
        })
    }

    #[test]
    fn writes_past_the_end_zero_fill_the_gap() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(10).await?;
            let file = disk.create(&path("a")).await?;
            write_block(&file, 2, 5).await?;
            let mut expected = vec![0; 2 * BLOCK];
            expected.extend(vec![5; BLOCK]);
            assert_eq!(disk.file_bytes(&path("a")), Some(expected));
            Ok(())
        })
    }

    #[test]
    fn stale_handles_fail_after_a_crash() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(11).await?;
            let file = disk.create(&path("a")).await?;
            disk.sync_dir(dir()).await?;
            disk.crash();
            assert!(file.write_at(file.alloc_buf(BLOCK), 0).await.is_err());
            assert!(file.read_at(0, 1).await.is_err());
            assert!(file.fdatasync().await.is_err());
            assert!(file.size().await.is_err());
            let fresh = disk.open(&path("a")).await?;
            write_block(&fresh, 0, 1).await?;
            Ok(())
        })
    }

    #[test]
    fn fail_next_fails_exactly_one_operation() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(12).await?;
            let file = disk.create(&path("a")).await?;
            disk.fail_next(SimOp::Write);
            let err = write_block(&file, 0, 1).await.err().map(|e| e.kind());
            assert_eq!(err, Some(io::ErrorKind::Other));
            assert_eq!(
                disk.file_bytes(&path("a")),
                Some(Vec::new()),
                "a failed write changes nothing"
            );
            write_block(&file, 0, 1).await?;
            disk.fail_next(SimOp::Fsync);
            assert!(file.fdatasync().await.is_err());
            assert_eq!(disk.unsynced_writes(&path("a")), 1, "a failed sync makes nothing durable");
            file.fdatasync().await?;
            disk.fail_next(SimOp::Read);
            assert!(file.read_at(0, 1).await.is_err());
            assert_eq!(file.read_at(0, 1).await?, vec![1]);
            assert_eq!(disk.stats().injected_faults, 3);
            Ok(())
        })
    }

    #[test]
    fn fault_probabilities_apply_and_can_be_changed() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(13).await?;
            let file = disk.create(&path("a")).await?;
            disk.set_faults(1_000_000, 1_000_000, 1_000_000);
            assert!(write_block(&file, 0, 1).await.is_err());
            assert!(file.read_at(0, 1).await.is_err());
            assert!(file.fdatasync().await.is_err());
            assert!(disk.sync_dir(dir()).await.is_err());
            disk.set_faults(0, 0, 0);
            write_block(&file, 0, 1).await?;
            Ok(())
        })
    }

    #[test]
    fn reads_past_eof_are_short() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(14).await?;
            let file = disk.create(&path("a")).await?;
            write_block(&file, 0, 3).await?;
            assert_eq!(file.read_at(4000, 200).await?.len(), 96);
            assert!(file.read_at(DMA_ALIGN_BYTES, 10).await?.is_empty());
            assert!(file.read_at(10 * DMA_ALIGN_BYTES, 10).await?.is_empty());
            assert!(file.read_at(u64::MAX, usize::MAX).await?.is_empty());
            Ok(())
        })
    }

    #[test]
    fn namespace_errors_match_the_file_system() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(15).await?;
            let kind = |r: io::Result<()>| r.err().map(|e| e.kind());
            disk.create(&path("a")).await?;
            assert_eq!(
                kind(disk.create(&path("a")).await.map(drop)),
                Some(io::ErrorKind::AlreadyExists)
            );
            assert_eq!(kind(disk.open(&path("b")).await.map(drop)), Some(io::ErrorKind::NotFound));
            assert_eq!(kind(disk.map(&path("b")).await.map(drop)), Some(io::ErrorKind::NotFound));
            assert_eq!(kind(disk.remove(&path("b")).await), Some(io::ErrorKind::NotFound));
            let no_parent = disk.create(Path::new("/nowhere/a")).await.map(drop);
            assert_eq!(kind(no_parent), Some(io::ErrorKind::NotFound));
            Ok(())
        })
    }

    #[test]
    fn list_dir_returns_only_direct_children() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(16).await?;
            disk.create_dir_all(&path("sub")).await?;
            disk.create(&path("a")).await?;
            disk.create(&path("sub").join("b")).await?;
            assert_eq!(disk.list_dir(dir()).await?, vec!["a".to_string()]);
            assert_eq!(disk.list_dir(&path("sub")).await?, vec!["b".to_string()]);
            Ok(())
        })
    }

    #[test]
    fn handle_to_removed_file_keeps_working() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(17).await?;
            let file = disk.create(&path("a")).await?;
            disk.remove(&path("a")).await?;
            write_block(&file, 0, 4).await?;
            file.fdatasync().await?;
            assert_eq!(file.read_at(0, 2).await?, vec![4, 4]);
            assert!(disk.file_names().is_empty());
            Ok(())
        })
    }

    #[test]
    fn map_is_a_snapshot_of_the_file() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(18).await?;
            disk.set_file_bytes(&path("ckpt"), vec![1, 2, 3]);
            let map = disk.map(&path("ckpt")).await?;
            disk.set_file_bytes(&path("ckpt"), vec![9]);
            assert_eq!(&map[..], &[1, 2, 3]);
            Ok(())
        })
    }

    #[test]
    fn sync_covers_only_writes_completed_before_it_was_issued() -> io::Result<()> {
        block_on(async {
            let disk = disk_with_dir(19).await?;
            let file = disk.create(&path("a")).await?;
            // `zip` polls the write first, so the sync is issued after the write was issued but
            // completes after the write completed; it must still not cover the write.
            let (written, synced) = zip(write_block(&file, 0, 1), file.fdatasync()).await;
            written?;
            synced?;
            assert_eq!(disk.unsynced_writes(&path("a")), 1);
            disk.crash_losing_all_unsynced();
            assert!(disk.file_names().is_empty(), "the create was never dir-synced either");
            Ok(())
        })
    }
}
