//! The fold across streams in the core: `usage.py`'s `UsageFold.merge` (thread counters,
//! session-file messages deduplicated across files), the estimate of each reading
//! (`prices.ModelPrice.cost`, from the prices the Python snapshot resolved for the model) and
//! the sums, rule for rule, without a Python object per reading.
//!
//! Readings are summed per (session, model, project, time bucket). A time bucket is a second
//! that is a multiple of 15 minutes, or the open interval between two of them: every zone's
//! offset and every change of it (since 1972) is a multiple of 15 minutes, so all readings of
//! a bucket fall on one local day (the caller checks it at each bucket's first and last
//! second), and a 5-hour block (which starts on an hour and ends 5 hours later) never splits
//! one. The caller names each bucket's day, week, month and block ([`Merge::group`]); sums
//! of integers do not depend on their order. What would: the CLIs' reported costs, added in
//! reading order to every total they reach as in `usage.py` (`singles`), and anything this
//! fold does not mirror exactly (a float token count, an integer beyond `i128`, a reported
//! cost with blocks or the active block) marks the merge [`Merge::inexact`]: the caller then
//! folds in Python.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The merge's maps: names, ids and small keys hashed by foldhash (SipHash, std's default,
/// took 230 instructions per name, a quarter of the merge's time; the keys are the user's
/// own files, no one chooses them to collide).
pub type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
type Set<K> = HashSet<K, foldhash::fast::RandomState>;
use std::sync::Arc;

use crate::event::Num;
use crate::usage::{Rec, Summary};

pub const ENDINGS: [&str; 4] = ["ok", "empty", "failed", "none"];
const UNKNOWN: &str = "unknown";
/// `usage._in_range`: 1970-01-02 .. 9999-12-31 (a reading outside has no local time).
const FIRST: f64 = 86_400.0;
const LAST: f64 = 253_402_214_400.0;
const QUARTER: i64 = 900;

/// A price: a number, or a base with long-context tiers (`above` input tokens).
#[derive(Debug, Clone)]
pub struct Price {
    pub base: f64,
    pub tiers: Vec<(Num, f64)>,
}

/// The prices in force from `since`: input, output, cacheRead, cacheWrite, cacheWrite1h.
#[derive(Debug, Clone)]
pub struct Period {
    pub since: Option<String>,
    pub prices: [Option<Price>; 5],
}

/// One model's prices (`prices.ModelPrice`): its periods, `since` ascending.
#[derive(Debug, Clone)]
pub struct ModelPrice {
    pub periods: Vec<Period>,
}

/// `prices._price_at`.
fn price_at(p: Option<&Price>, input: i128) -> Option<f64> {
    let p = p?;
    let mut x = p.base;
    for (above, price) in &p.tiers {
        if !Num::Int(input).le(*above) {
            x = *price;
        }
    }
    Some(x)
}

impl ModelPrice {
    /// `ModelPrice.at`.
    fn at(&self, day: Option<&str>) -> Option<&Period> {
        let mut chosen = self.periods.first()?;
        for p in &self.periods {
            match (p.since.as_deref(), day) {
                (Some(since), Some(day)) if day < since => {}
                _ => chosen = p,
            }
        }
        Some(chosen)
    }

    /// `ModelPrice.cost` in the same float operations (the counts are integers here).
    pub fn cost(&self, n: [i128; 5], day: Option<&str>) -> Option<f64> {
        let [input, output, cached, write_n, write1h_n] = n;
        let p = self.at(day)?;
        let get = |i: usize| price_at(p.prices.get(i).and_then(Option::as_ref), input);
        let or0 = |v: Option<f64>| v.filter(|x| *x != 0.0).unwrap_or(0.0);
        let inp = or0(get(0));
        let out = or0(get(1));
        let read = get(2).unwrap_or(inp);
        let write = get(3).unwrap_or(inp);
        let write1h = get(4).unwrap_or(write);
        let w1h = write1h_n.min(write_n);
        let plain = input.checked_sub(cached)?.checked_sub(write_n)?.max(0);
        let f = |i: i128| i as f64;
        let usd = f(plain) * inp
            + f(cached) * read
            + f(write_n.checked_sub(w1h)?) * write
            + f(w1h) * write1h
            + f(output) * out;
        Some(usd / 1e6)
    }
}

/// A total (`usage._Acc` without the reported costs' sum, which [`Merge::group`] adds).
#[derive(Debug, Clone, Default)]
pub struct Acc {
    pub input: i128,
    pub output: i128,
    pub cached: i128,
    /// The estimates in pico-USD.
    pub estimated: i128,
    pub readings: u64,
    pub n_reported: u64,
    pub n_estimated: u64,
    pub n_free: u64,
    /// reasoningTokens, cacheWriteTokens, cacheWrite1hTokens where reported.
    pub parts: [Option<i128>; 3],
    /// Model ids of readings with tokens and no cost.
    pub unpriced: BTreeSet<u32>,
}

fn add_to(a: &mut i128, b: i128) -> bool {
    match a.checked_add(b) {
        Some(s) => {
            *a = s;
            true
        }
        None => false,
    }
}

impl Acc {
    /// `_Acc.merge` (the reported sum aside); false on an overflow.
    pub fn merge(&mut self, o: &Acc) -> bool {
        let mut ok = add_to(&mut self.input, o.input)
            & add_to(&mut self.output, o.output)
            & add_to(&mut self.cached, o.cached)
            & add_to(&mut self.estimated, o.estimated);
        self.readings += o.readings;
        self.n_reported += o.n_reported;
        self.n_estimated += o.n_estimated;
        self.n_free += o.n_free;
        for (a, b) in self.parts.iter_mut().zip(o.parts) {
            if let Some(b) = b {
                let mut v = a.unwrap_or(0);
                ok &= add_to(&mut v, b);
                *a = Some(v);
            }
        }
        self.unpriced.extend(o.unpriced.iter().copied());
        ok
    }
}

/// The integer of a count, or `Err` for a float (summed in order in Python).
fn int(n: Option<Num>) -> Result<Option<i128>, ()> {
    match n {
        None => Ok(None),
        Some(Num::Int(i)) => Ok(Some(i)),
        Some(Num::Float(_)) => Err(()),
    }
}

/// `_Rec.minus`: componentwise `self - base`, never below 0 (integers; else `None`).
fn minus(r: &Rec, base: &Rec) -> Option<Rec> {
    let mut out = r.clone();
    let pairs = [
        (&mut out.input, base.input),
        (&mut out.output, base.output),
        (&mut out.cached, base.cached),
        (&mut out.cost, base.cost),
        (&mut out.reasoning, base.reasoning),
        (&mut out.cache_write, base.cache_write),
        (&mut out.cache_write_1h, base.cache_write_1h),
    ];
    for (a, b) in pairs {
        if let (Some(x), Some(y)) = (*a, b) {
            let (Num::Int(x), Num::Int(y)) = (x, y) else {
                return None;
            };
            *a = Some(Num::Int(x.checked_sub(y)?.max(0)));
        }
    }
    Some(out)
}

/// `_zero()`: nothing reported.
fn zero() -> Rec {
    Rec {
        model: UNKNOWN.to_owned(),
        input: None,
        output: None,
        cached: None,
        cost: None,
        reasoning: None,
        cache_write: None,
        cache_write_1h: None,
        ts: None,
        project: None,
    }
}

/// `_has_tokens`.
fn has_tokens(r: &Rec) -> bool {
    let nonzero = |n: Option<Num>| match n {
        Some(Num::Int(i)) => i != 0,
        Some(Num::Float(f)) => f != 0.0,
        None => false,
    };
    nonzero(r.input) || nonzero(r.output)
}

/// The time bucket of an epoch second: `2k` for the second `900k`, `2k + 1` for the seconds
/// strictly between `900k` and `900(k + 1)`.
pub fn bucket_of(sec: i64) -> i64 {
    let k = sec.div_euclid(QUARTER);
    if sec.rem_euclid(QUARTER) == 0 {
        2 * k
    } else {
        2 * k + 1
    }
}

/// A bucket's key: session, model, project label, time bucket (`None`: no local time).
type Key = (u32, u32, u32, Option<i64>);

/// Interned names (sessions, models, projects).
#[derive(Debug, Default)]
struct Names {
    ids: Map<String, u32>,
    names: Vec<String>,
}

impl Names {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.ids.insert(s.to_owned(), i);
        self.names.push(s.to_owned());
        i
    }

    pub fn name(&self, i: u32) -> &str {
        self.names.get(i as usize).map_or(UNKNOWN, String::as_str)
    }
}

/// The totals a bucket reached in [`Merge::group`]: session, model, day, row key.
type Reach = (u32, u32, String, Vec<String>);

/// No name (a [`Kept`]'s session or project).
const NO_NAME: u32 = u32::MAX;
/// [`Kept::flags`]: the message was read from a sidechain.
const SIDECHAIN: u8 = 1;
/// [`Kept::flags`]: the reading is kept whole, in [`Merge::wholes`] at `counts[0]`.
const WHOLE: u8 = 2;
/// [`Kept::present`]: the timestamp is there (bits 0-6: the counts).
const TS: u8 = 1 << 7;
/// Session-file messages kept per chunk of [`Store`]: 320 KiB each.
const CHUNK: usize = 4096;
/// The seed of [`dedup_hash`] (any fixed value: the hashes live only in one run).
const SEED: u64 = 0x6368_6563_6b66_7521;

/// A session-file message's deduplication key (`m:` and its `message.id`, else `r:` and its
/// `requestId`) as its 128-bit XXH3 hash, 16 bytes where the key took a 24-byte `String` and
/// its 40 to 60 bytes of text. Two distinct keys share a hash with a probability of 2^-128
/// per pair: among n keys about n^2 / 2^129, 7 x 10^-29 for the 216k messages of a 1 GiB
/// tree and below 10^-20 for a billion (session files are the user's own: no one chooses
/// keys to collide).
fn dedup_hash(key: &str) -> (u64, u64) {
    let h = twox_hash::XxHash3_128::oneshot_with_seed(SEED, key.as_bytes());
    ((h >> 64) as u64, h as u64)
}

/// The hasher of keys that are hashes already ([`dedup_hash`]): their bits as they are.
#[derive(Debug, Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = self.0.rotate_left(32) ^ n;
    }
}

/// A session-file message's reading, kept until the messages are counted ([`Merge::finish`]):
/// a big tree holds hundreds of thousands of them, 80 bytes each. Its counts as the bits of
/// an `i64` or `f64` (`present`, `floats`: one bit per count), its model, project and session
/// interned in [`Merge::kept_names`] ([`NO_NAME`]: none), its dialect in [`Merge::dialects`];
/// a reading with a count beyond 64 bits is kept whole ([`WHOLE`]). [`Merge::rec_of`] gives
/// the same [`Rec`] back.
#[derive(Debug, Clone, Copy)]
struct Kept {
    /// input, output, cached, cost, reasoning, cacheWrite, cacheWrite1h
    counts: [u64; 7],
    ts: f64,
    model: u32,
    project: u32,
    session: u32,
    present: u8,
    floats: u8,
    dialect: u8,
    flags: u8,
}

/// Items in arrival order (the kept messages, the buckets), in chunks of [`CHUNK`]: no
/// doubling of one vector (twice the memory while it moves, up to half of it unused after).
#[derive(Debug)]
struct Store<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Store<T> {
    fn default() -> Self {
        Store {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Store<T> {
    fn push(&mut self, k: T) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push(k),
            _ => {
                let mut c = Vec::with_capacity(CHUNK);
                c.push(k);
                self.chunks.push(c);
            }
        }
        self.len += 1;
    }

    fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.chunks.get_mut(i / CHUNK)?.get_mut(i % CHUNK)
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }
}

/// What the caller says of one time bucket (`labels` of [`Merge::group`]).
#[derive(Debug, Clone)]
pub struct Label {
    pub day: String,
    pub week: String,
    pub month: String,
    /// Inside `--since`/`--until`.
    pub inside: bool,
    /// The block's start (ISO 8601 UTC), where blocks are asked for.
    pub block: Option<String>,
    /// In the open block (`--active`).
    pub active: bool,
}

/// The totals [`Merge::group`] gives: per total its [`Acc`] and reported sum.
#[derive(Debug)]
pub struct Groups {
    pub total: (Acc, Num),
    pub models: Map<u32, (Acc, Num)>,
    pub sessions: Map<u32, (Acc, Num)>,
    pub days: Map<String, (Acc, Num)>,
    pub rows: Map<Vec<String>, (Acc, Num)>,
    pub active: Option<(Acc, Num)>,
}

/// The fold across streams.
#[derive(Debug)]
pub struct Merge {
    estimate: bool,
    /// Why the result would differ from the Python fold's, if it would.
    pub inexact: Option<&'static str>,
    prices: Map<String, Option<Arc<ModelPrice>>>,
    /// per model (id in `models`) whose price was looked up: its price
    model_prices: Vec<Option<Option<Arc<ModelPrice>>>>,
    /// per session (id in `sessions`): its dialect (id in `dialect_names`), or [`NO_NAME`]
    session_dialect: Vec<u32>,
    dialect_names: Names,
    /// per session: its thread counter, and its base (as [`Kept`], in `kept_names`)
    session_counters: Map<u32, Kept>,
    session_base: Map<u32, Kept>,
    stream_last: Map<String, Rec>,
    burst: Map<String, Option<String>>,
    continued: Set<String>,
    /// the session-file messages: [`dedup_hash`] of the key -> index in `kept`
    files: HashMap<(u64, u64), usize, BuildHasherDefault<Prehashed>>,
    kept: Store<Kept>,
    /// the readings of `kept` with a count beyond 64 bits
    wholes: Vec<Rec>,
    /// the models, projects and sessions of `kept`
    kept_names: Names,
    dialects: Vec<&'static str>,
    files_counted: bool,
    sessions: Names,
    models: Names,
    projects: Names,
    buckets: Map<Key, usize>,
    bucket_list: Store<(Key, Acc)>,
    /// time bucket -> index in `times`
    tb_index: Map<i64, usize>,
    /// per time bucket: (bucket, first second, last second)
    pub times: Vec<(i64, i64, i64)>,
    /// reported costs in reading order: (bucket index, cost)
    singles: Vec<(usize, Num)>,
    endings: [u64; 4],
    /// per session with a row from its streams' endings
    session_endings: Map<u32, [u64; 4]>,
}

fn ending_index(e: &str) -> Option<usize> {
    ENDINGS.iter().position(|x| *x == e)
}

impl Merge {
    pub fn new(estimate: bool) -> Merge {
        Merge {
            estimate,
            inexact: None,
            prices: Map::default(),
            model_prices: Vec::new(),
            session_dialect: Vec::new(),
            dialect_names: Names::default(),
            session_counters: Map::default(),
            session_base: Map::default(),
            stream_last: Map::default(),
            burst: Map::default(),
            continued: Set::default(),
            files: HashMap::default(),
            kept: Store::default(),
            wholes: Vec::new(),
            kept_names: Names::default(),
            dialects: Vec::new(),
            files_counted: false,
            sessions: Names::default(),
            models: Names::default(),
            projects: Names::default(),
            buckets: Map::default(),
            bucket_list: Store::default(),
            tb_index: Map::default(),
            times: Vec::new(),
            singles: Vec::new(),
            endings: [0; 4],
            session_endings: Map::default(),
        }
    }

    fn fail(&mut self, why: &'static str) {
        if self.inexact.is_none() {
            self.inexact = Some(why);
        }
    }

    /// The models whose prices are not known yet among `s`'s readings (the caller resolves
    /// them with [`Merge::set_price`] before [`Merge::merge`]).
    pub fn unresolved<'a>(&self, s: &'a Summary) -> Vec<&'a str> {
        if !self.estimate {
            return Vec::new();
        }
        let mut out: Vec<&str> = Vec::new();
        let recs = s
            .counters
            .iter()
            .map(|c| &c.2)
            .chain(s.readings.iter().map(|r| &r.2))
            .chain(s.files.iter().map(|f| &f.1));
        for r in recs {
            let m = r.model.as_str();
            if !self.prices.contains_key(m) && !out.contains(&m) {
                out.push(m);
            }
        }
        out
    }

    pub fn set_price(&mut self, model: &str, price: Option<ModelPrice>) {
        self.prices.insert(model.to_owned(), price.map(Arc::new));
    }

    fn dialect_default(&mut self, session: &str, dialect: &str) {
        let id = self.sessions.id(session);
        self.dialect_default_id(id, dialect);
    }

    /// The session's dialect, where it has none yet (`id` in `sessions`).
    fn dialect_default_id(&mut self, id: u32, dialect: &str) {
        let i = id as usize;
        if self.session_dialect.len() <= i {
            self.session_dialect.resize(i + 1, NO_NAME);
        }
        if self.session_dialect.get(i) == Some(&NO_NAME) {
            let d = self.dialect_names.id(dialect);
            if let Some(slot) = self.session_dialect.get_mut(i) {
                *slot = d;
            }
        }
    }

    /// The dialect of a session (`id` in `sessions`).
    pub fn dialect_of(&self, id: u32) -> Option<&str> {
        match self.session_dialect.get(id as usize) {
            Some(&d) if d != NO_NAME => Some(self.dialect_names.name(d)),
            _ => None,
        }
    }

    /// `UsageFold.merge`: one stream's summary, in the stream's place.
    pub fn merge(&mut self, s: &Summary) {
        self.stream_last.clear();
        self.burst.clear();
        self.continued.clear();
        for (sid, dialect, rec, ts, continued) in &s.counters {
            if *continued {
                self.continued.insert(sid.clone());
            }
            self.session_counter(sid, dialect, rec, ts.as_deref());
        }
        for (name, dialect, r) in &s.readings {
            self.count(name, r);
            self.dialect_default(name, dialect);
        }
        let Some(e) = ending_index(s.ending) else {
            self.fail("an ending the fold does not know");
            return;
        };
        if let Some(n) = self.endings.get_mut(e) {
            *n += 1;
        }
        if s.ending != "none" || s.had_usage {
            let id = self.sessions.id(&s.session);
            if let Some(n) = self.session_endings.entry(id).or_default().get_mut(e) {
                *n += 1;
            }
            let (session, dialect) = (s.session.clone(), s.dialect.clone());
            self.dialect_default(&session, &dialect);
        }
        for (key, r, session, dialect, sidechain) in &s.files {
            let h = dedup_hash(key);
            let seen = self.files.get(&h).copied();
            if let Some(i) = seen {
                let Some(&k) = self.kept.get(i) else {
                    continue;
                };
                let old = self.rec_of(&k);
                if !r.outranks(*sidechain, &old, k.flags & SIDECHAIN != 0) {
                    continue;
                }
            }
            let Some(k) = self.keep(r, session.as_deref(), dialect, *sidechain) else {
                self.fail("more dialects or names than the merge counts");
                return;
            };
            match seen {
                Some(i) => {
                    if let Some(slot) = self.kept.get_mut(i) {
                        *slot = k;
                    }
                }
                None => {
                    self.files.insert(h, self.kept.len);
                    self.kept.push(k);
                }
            }
        }
    }

    /// A session-file message as [`Kept`] (`None`: more than 255 dialects).
    fn keep(
        &mut self,
        r: &Rec,
        session: Option<&str>,
        dialect: &'static str,
        sidechain: bool,
    ) -> Option<Kept> {
        let dialect = match self.dialects.iter().position(|d| *d == dialect) {
            Some(i) => i,
            None => {
                self.dialects.push(dialect);
                self.dialects.len() - 1
            }
        };
        let dialect = u8::try_from(dialect).ok()?;
        let session = session.map_or(NO_NAME, |s| self.kept_names.id(s));
        let mut k = self.pack(r, None);
        k.session = session;
        k.dialect = dialect;
        if sidechain {
            k.flags |= SIDECHAIN;
        }
        Some(k)
    }

    /// A reading as [`Kept`] (no session, dialect or flags but [`WHOLE`]); `whole`: the slot
    /// of [`Merge::wholes`] to reuse for it, where it is kept whole (a counter's own).
    fn pack(&mut self, r: &Rec, whole: Option<usize>) -> Kept {
        let mut k = Kept {
            counts: [0; 7],
            ts: r.ts.unwrap_or(0.0),
            model: NO_NAME,
            project: NO_NAME,
            session: NO_NAME,
            present: if r.ts.is_some() { TS } else { 0 },
            floats: 0,
            dialect: 0,
            flags: 0,
        };
        let counts = [
            r.input,
            r.output,
            r.cached,
            r.cost,
            r.reasoning,
            r.cache_write,
            r.cache_write_1h,
        ];
        for (i, (slot, n)) in k.counts.iter_mut().zip(counts).enumerate() {
            let bit = 1u8 << i;
            match n {
                None => continue,
                Some(Num::Float(f)) => {
                    *slot = f.to_bits();
                    k.floats |= bit;
                }
                Some(Num::Int(n)) => match i64::try_from(n) {
                    Ok(n) => *slot = n as u64,
                    Err(_) => {
                        let i = match whole.filter(|i| *i < self.wholes.len()) {
                            Some(i) => {
                                if let Some(slot) = self.wholes.get_mut(i) {
                                    slot.clone_from(r);
                                }
                                i
                            }
                            None => {
                                self.wholes.push(r.clone());
                                self.wholes.len() - 1
                            }
                        };
                        k.counts = [i as u64, 0, 0, 0, 0, 0, 0];
                        k.flags = WHOLE;
                        return k;
                    }
                },
            }
            k.present |= bit;
        }
        k.model = self.kept_names.id(&r.model);
        k.project = r
            .project
            .as_deref()
            .map_or(NO_NAME, |p| self.kept_names.id(p));
        k
    }

    /// The slot of [`Merge::wholes`] a [`Kept`] holds its reading in.
    fn whole_of(k: &Kept) -> Option<usize> {
        (k.flags & WHOLE != 0).then(|| usize::try_from(k.counts[0]).unwrap_or(usize::MAX))
    }

    /// The [`Rec`] a [`Kept`] was made of.
    fn rec_of(&self, k: &Kept) -> Rec {
        if k.flags & WHOLE != 0 {
            let i = usize::try_from(k.counts[0]).unwrap_or(usize::MAX);
            return self.wholes.get(i).cloned().unwrap_or_else(zero);
        }
        let names = &self.kept_names;
        Rec {
            model: names.name(k.model).to_owned(),
            project: (k.project != NO_NAME).then(|| names.name(k.project).to_owned()),
            ..Self::counts_of(k)
        }
    }

    /// The counts and time of a [`Kept`] that is not kept whole, as a [`Rec`] without its
    /// model's or project's name (no allocation).
    fn counts_of(k: &Kept) -> Rec {
        let mut n = [None; 7];
        for (i, (slot, bits)) in n.iter_mut().zip(k.counts).enumerate() {
            let bit = 1u8 << i;
            if k.present & bit != 0 {
                *slot = Some(if k.floats & bit != 0 {
                    Num::Float(f64::from_bits(bits))
                } else {
                    Num::Int(i128::from(bits as i64))
                });
            }
        }
        let [input, output, cached, cost, reasoning, cache_write, cache_write_1h] = n;
        Rec {
            model: String::new(),
            input,
            output,
            cached,
            cost,
            reasoning,
            cache_write,
            cache_write_1h,
            ts: (k.present & TS != 0).then_some(k.ts),
            project: None,
        }
    }

    /// `UsageFold._session_counter`.
    fn session_counter(&mut self, sid: &str, dialect: &str, rec: &Rec, ts: Option<&str>) {
        self.dialect_default(sid, dialect);
        if self.continued.contains(sid) {
            let second: Option<String> = ts.map(|t| t.chars().take(19).collect());
            match self.burst.get(sid) {
                None => {
                    self.burst.insert(sid.to_owned(), second);
                    self.base(sid, rec);
                    return;
                }
                Some(b) => {
                    if second.is_some() && *b == second {
                        self.base(sid, rec);
                        return;
                    }
                }
            }
            self.burst.insert(sid.to_owned(), None);
        }
        let last = self.stream_last.insert(sid.to_owned(), rec.clone());
        let id = self.sessions.id(sid);
        let old = self.session_counters.get(&id).copied();
        let reset = match (old, &last) {
            (None, _) => false,
            (Some(_), Some(last)) => !rec.covers(last),
            (Some(_), None) => false,
        };
        let mut seen = match (old, reset) {
            (None, _) => match self.session_base.get(&id).copied() {
                Some(b) => self.rec_of(&b),
                None => zero(),
            },
            (Some(_), true) => zero(),
            (Some(k), false) => self.rec_of(&k),
        };
        let delta = minus(rec, &seen);
        seen.merge_max(rec);
        let k = self.pack(&seen, old.as_ref().and_then(Self::whole_of));
        self.session_counters.insert(id, k);
        match delta {
            Some(d) => self.count(sid, &d),
            None => self.fail("a float or out-of-range count in a thread counter"),
        }
    }

    fn base(&mut self, sid: &str, rec: &Rec) {
        let id = self.sessions.id(sid);
        let old = self.session_base.get(&id).copied();
        let k = match old {
            None => self.pack(rec, None),
            Some(k) => {
                let mut b = self.rec_of(&k);
                b.merge_max(rec);
                self.pack(&b, Self::whole_of(&k))
            }
        };
        self.session_base.insert(id, k);
    }

    /// The estimate of a reading (`_Agg.estimate`) in pico-USD, `Err` where Python's would
    /// not be mirrored.
    fn estimate(
        &mut self,
        r: &Rec,
        model: u32,
        n: [i128; 5],
    ) -> Result<Option<i128>, &'static str> {
        if r.cost.is_some() || !self.estimate || !has_tokens(r) {
            return Ok(None);
        }
        let i = model as usize;
        let known = match self.model_prices.get(i) {
            Some(Some(p)) => p.clone(),
            _ => {
                // looked up once per model (a price, once resolved, stays)
                let Some(p) = self.prices.get(self.models.name(model)) else {
                    return Err("a model whose price was not resolved");
                };
                let p = p.clone();
                if self.model_prices.len() <= i {
                    self.model_prices.resize(i + 1, None);
                }
                if let Some(slot) = self.model_prices.get_mut(i) {
                    *slot = Some(p.clone());
                }
                p
            }
        };
        let Some(mp) = known else {
            return Ok(None);
        };
        let day = match r.ts {
            Some(t) if mp.periods.len() > 1 && (FIRST..=LAST).contains(&t) => {
                Some(utc_day(t.trunc() as i64))
            }
            _ => None,
        };
        let Some(est) = mp.cost(n, day.as_deref()) else {
            return Err("a price without periods or a count out of range");
        };
        let pico = (est * 1e12).round_ties_even();
        if !pico.is_finite() || pico.abs() >= 1e37 {
            return Err("an estimate beyond i128");
        }
        Ok(Some(pico as i128))
    }

    /// `_Agg.add` up to the time labels: the reading into its bucket.
    fn count(&mut self, session: &str, r: &Rec) {
        let project = r
            .project
            .as_deref()
            .filter(|p| !p.is_empty())
            .unwrap_or(UNKNOWN);
        let ids = (
            self.sessions.id(session),
            self.models.id(&r.model),
            self.projects.id(project),
        );
        self.count_ids(ids, r);
    }

    /// [`Merge::count`] of a reading whose session, model and project label are named by
    /// their ids (`r`'s own model and project are not read).
    fn count_ids(&mut self, ids: (u32, u32, u32), r: &Rec) {
        if let Err(why) = self.count_inner(ids, r) {
            self.fail(why);
        }
    }

    fn count_inner(&mut self, ids: (u32, u32, u32), r: &Rec) -> Result<(), &'static str> {
        let floats = "a float count (summed in reading order)";
        let input = int(r.input).map_err(|()| floats)?;
        let output = int(r.output).map_err(|()| floats)?;
        let cached = int(r.cached).map_err(|()| floats)?;
        let reasoning = int(r.reasoning).map_err(|()| floats)?;
        let write = int(r.cache_write).map_err(|()| floats)?;
        let write1h = int(r.cache_write_1h).map_err(|()| floats)?;
        if matches!(r.cost, Some(Num::Float(f)) if f == 0.0 && f.is_sign_negative()) {
            return Err("a reported cost of -0.0");
        }
        let tb = match r.ts {
            Some(t) if (FIRST..=LAST).contains(&t) => {
                if t.fract() >= 0.999_999_5 {
                    return Err("a time that rounds to the next second");
                }
                let sec = t.trunc() as i64;
                let b = bucket_of(sec);
                match self.tb_index.get(&b) {
                    Some(&i) => {
                        if let Some(slot) = self.times.get_mut(i) {
                            slot.1 = slot.1.min(sec);
                            slot.2 = slot.2.max(sec);
                        }
                    }
                    None => {
                        self.tb_index.insert(b, self.times.len());
                        self.times.push((b, sec, sec));
                    }
                }
                Some(b)
            }
            _ => None,
        };
        let n = [
            input.unwrap_or(0),
            output.unwrap_or(0),
            cached.unwrap_or(0),
            write.unwrap_or(0),
            write1h.unwrap_or(0),
        ];
        let est = self.estimate(r, ids.1, n)?;
        let key = (ids.0, ids.1, ids.2, tb);
        let i = match self.buckets.get(&key) {
            Some(&i) => i,
            None => {
                self.buckets.insert(key, self.bucket_list.len);
                self.bucket_list.push((key, Acc::default()));
                self.bucket_list.len - 1
            }
        };
        let Some((_, acc)) = self.bucket_list.get_mut(i) else {
            return Err("a lost bucket");
        };
        let overflow = "a sum beyond i128";
        acc.readings += 1;
        for (a, v) in [
            (&mut acc.input, input),
            (&mut acc.output, output),
            (&mut acc.cached, cached),
        ] {
            if let Some(v) = v {
                if !add_to(a, v) {
                    return Err(overflow);
                }
            }
        }
        if let Some(c) = r.cost {
            acc.n_reported += 1;
            self.singles.push((i, c));
        } else if let Some(p) = est {
            acc.n_estimated += 1;
            if !add_to(&mut acc.estimated, p) {
                return Err(overflow);
            }
        } else if input.is_none() || has_tokens(r) {
            acc.unpriced.insert(key.1);
        } else {
            acc.n_free += 1;
        }
        for (a, v) in acc.parts.iter_mut().zip([reasoning, write, write1h]) {
            if let Some(v) = v {
                let mut s = a.unwrap_or(0);
                if !add_to(&mut s, v) {
                    return Err(overflow);
                }
                *a = Some(s);
            }
        }
        Ok(())
    }

    /// `_final`: the session-file messages counted (once; no stream may follow).
    pub fn finish(&mut self) {
        if self.files_counted {
            return;
        }
        self.files_counted = true;
        self.files = HashMap::default();
        let kept = std::mem::take(&mut self.kept);
        // a kept name's ids as a session, a model and a project label, each looked up once
        let n = self.kept_names.names.len();
        let (mut as_session, mut as_model, mut as_project) =
            (vec![NO_NAME; n], vec![NO_NAME; n], vec![NO_NAME; n]);
        fn id_of(ids: &mut [u32], names: &mut Names, kept: &Names, i: u32, project: bool) -> u32 {
            let slot = ids.get(i as usize).copied().unwrap_or(NO_NAME);
            if slot != NO_NAME {
                return slot;
            }
            let name = match kept.name(i) {
                "" if project => UNKNOWN, // `count`'s label of an empty project
                s => s,
            };
            let id = names.id(name);
            if let Some(s) = ids.get_mut(i as usize) {
                *s = id;
            }
            id
        }
        for chunk in kept.chunks {
            for k in chunk {
                let dialect = self.dialects.get(usize::from(k.dialect)).copied();
                let dialect = dialect.unwrap_or(UNKNOWN);
                if k.flags & WHOLE != 0 {
                    let r = self.rec_of(&k);
                    let name = match k.session {
                        NO_NAME => UNKNOWN.to_owned(),
                        s => self.kept_names.name(s).to_owned(),
                    };
                    self.count(&name, &r);
                    self.dialect_default(&name, dialect);
                    continue;
                }
                let kn = &self.kept_names;
                let session = match k.session {
                    NO_NAME => self.sessions.id(UNKNOWN),
                    s => id_of(&mut as_session, &mut self.sessions, kn, s, false),
                };
                let model = id_of(&mut as_model, &mut self.models, kn, k.model, false);
                let project = match k.project {
                    NO_NAME => self.projects.id(UNKNOWN),
                    p => id_of(&mut as_project, &mut self.projects, kn, p, true),
                };
                let r = Self::counts_of(&k);
                self.count_ids((session, model, project), &r);
                self.dialect_default_id(session, dialect);
            }
        }
    }

    pub fn session_name(&self, id: u32) -> &str {
        self.sessions.name(id)
    }

    pub fn model_name(&self, id: u32) -> &str {
        self.models.name(id)
    }

    /// The totals with the caller's labels of the time buckets (`labels[i]` names
    /// `times[i]`; `none` the readings without a local time): `by` the row dimensions (the
    /// block first where it is one, as `UsageFold.rows` keys its groups).
    pub fn group(
        &mut self,
        labels: &[Label],
        none: &Label,
        by: &[String],
        by_day: bool,
        active: bool,
    ) -> Groups {
        self.finish();
        let blocks = by.iter().any(|d| d == "block");
        if (blocks || active) && !self.singles.is_empty() {
            self.fail("reported costs with blocks (summed per second in Python)");
        }
        let zero = || (Acc::default(), Num::Int(0));
        let mut g = Groups {
            total: zero(),
            models: Map::default(),
            sessions: Map::default(),
            days: Map::default(),
            rows: Map::default(),
            active: active.then(zero),
        };
        let rows = !by.is_empty() && by != ["session"];
        let mut ok = true;
        // per bucket, the keys of the totals it reaches (for its reported costs after)
        let mut reach: Vec<Option<Reach>> = Vec::with_capacity(self.bucket_list.len);
        for ((session, model, project, tb), acc) in self.bucket_list.iter() {
            let label = match tb {
                None => none,
                Some(b) => match self.tb_index.get(b).and_then(|&i| labels.get(i)) {
                    Some(l) => l,
                    None => {
                        ok = false;
                        reach.push(None);
                        continue;
                    }
                },
            };
            if !label.inside {
                reach.push(None);
                continue;
            }
            ok &= g.total.0.merge(acc);
            ok &= g.models.entry(*model).or_insert_with(zero).0.merge(acc);
            ok &= g.sessions.entry(*session).or_insert_with(zero).0.merge(acc);
            if by_day {
                ok &= g
                    .days
                    .entry(label.day.clone())
                    .or_insert_with(zero)
                    .0
                    .merge(acc);
            }
            let mut key = Vec::new();
            if rows {
                if blocks {
                    key.push(label.block.clone().unwrap_or_else(|| UNKNOWN.to_owned()));
                }
                for dim in by {
                    key.push(match dim.as_str() {
                        "session" => self.sessions.name(*session).to_owned(),
                        "model" => self.models.name(*model).to_owned(),
                        "project" => self.projects.name(*project).to_owned(),
                        "day" => label.day.clone(),
                        "week" => label.week.clone(),
                        "month" => label.month.clone(),
                        _ => continue,
                    });
                }
                ok &= g.rows.entry(key.clone()).or_insert_with(zero).0.merge(acc);
            }
            if label.active {
                if let Some(a) = g.active.as_mut() {
                    ok &= a.0.merge(acc);
                }
            }
            reach.push(Some((*session, *model, label.day.clone(), key)));
        }
        for (i, cost) in &self.singles {
            let Some(Some((session, model, day, key))) = reach.get(*i) else {
                continue;
            };
            let add = |t: &mut (Acc, Num)| t.1 = t.1.plus(*cost);
            add(&mut g.total);
            if let Some(t) = g.models.get_mut(model) {
                add(t);
            }
            if let Some(t) = g.sessions.get_mut(session) {
                add(t);
            }
            if by_day {
                if let Some(t) = g.days.get_mut(day) {
                    add(t);
                }
            }
            if rows {
                if let Some(t) = g.rows.get_mut(key) {
                    add(t);
                }
            }
        }
        for id in self.session_endings.keys() {
            g.sessions.entry(*id).or_insert_with(zero);
        }
        if !ok {
            self.fail("a sum beyond i128");
        }
        g
    }

    pub fn endings(&self) -> [u64; 4] {
        self.endings
    }

    pub fn session_endings(&self, id: u32) -> [u64; 4] {
        self.session_endings.get(&id).copied().unwrap_or([0; 4])
    }
}

/// `YYYY-MM-DD` of an epoch second (UTC), as `usage.utc_day_of`.
pub fn utc_day(sec: i64) -> String {
    // Hinnant's civil_from_days
    let z = sec.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_reading_is_the_reading() {
        let r = Rec {
            model: "m".to_owned(),
            input: Some(Num::Int(i128::from(i64::MAX))),
            output: Some(Num::Int(-3)),
            cached: None,
            cost: Some(Num::Float(0.25)),
            reasoning: Some(Num::Float(-0.0)),
            cache_write: Some(Num::Int(i128::from(i64::MIN))),
            cache_write_1h: None,
            ts: Some(1.5),
            project: Some("/p".to_owned()),
        };
        let mut m = Merge::new(false);
        let kept = m.keep(&r, Some("s"), "claude", true);
        let Some(kept) = kept else {
            panic!("not kept");
        };
        assert_eq!(kept.flags, SIDECHAIN);
        let back = m.rec_of(&kept);
        assert_eq!(back, r);
        assert!(matches!(back.reasoning, Some(Num::Float(f)) if f.is_sign_negative()));
        let big = Rec {
            input: Some(Num::Int(i128::from(i64::MAX) + 1)),
            project: None,
            ts: None,
            ..r.clone()
        };
        let kept = m
            .keep(&big, None, "codex", false)
            .map(|k| (k, m.rec_of(&k)));
        assert!(matches!(kept, Some((k, _)) if k.flags == WHOLE && k.session == NO_NAME));
        assert_eq!(kept.map(|k| k.1), Some(big));
        let plain = Rec {
            project: None,
            ts: Some(0.0),
            ..r
        };
        let kept = m.keep(&plain, None, "claude", false).map(|k| m.rec_of(&k));
        assert_eq!(kept, Some(plain));
        assert_eq!(m.dialects, ["claude", "codex"]);
        assert_eq!(std::mem::size_of::<Kept>(), 80);
    }

    #[test]
    fn dedup_hashes_differ() {
        assert_ne!(dedup_hash("m:msg_1"), dedup_hash("r:msg_1"));
        assert_eq!(dedup_hash("m:msg_1"), dedup_hash("m:msg_1"));
        let mut seen = HashSet::new();
        for i in 0..10_000 {
            assert!(seen.insert(dedup_hash(&format!("m:msg_{i}"))));
        }
    }

    #[test]
    fn buckets_and_days() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1), 1);
        assert_eq!(bucket_of(899), 1);
        assert_eq!(bucket_of(900), 2);
        assert_eq!(utc_day(0), "1970-01-01");
        assert_eq!(utc_day(1_709_164_800), "2024-02-29");
        assert_eq!(utc_day(253_402_214_400), "9999-12-31");
    }

    #[test]
    fn costs_as_python() {
        let p = |x: f64| {
            Some(Price {
                base: x,
                tiers: vec![],
            })
        };
        let m = ModelPrice {
            periods: vec![Period {
                since: None,
                prices: [
                    Some(Price {
                        base: 3.0,
                        tiers: vec![(Num::Int(200_000), 6.0)],
                    }),
                    p(15.0),
                    p(0.3),
                    p(3.75),
                    None,
                ],
            }],
        };
        // (1000 - 100 - 10) * 3 + 100 * 0.3 + 10 * 3.75 + 0 + 50 * 15, per million: the
        // values Python's ModelPrice.cost gives, to the bit
        let c = m.cost([1000, 50, 100, 10, 0], None).unwrap_or_default();
        assert_eq!(c.to_bits(), 0.003_487_5_f64.to_bits());
        let big = m.cost([300_000, 0, 0, 0, 0], None).unwrap_or_default();
        assert_eq!(big.to_bits(), 1.8_f64.to_bits());
    }
}
