package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.core.io.Closeables;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.LongUnaryOperator;

/**
 * The declared snapshots: their declarations and rank changes (the snapshot log, Start(v)), their declared ranks per
 * level — from which a page's SavedAfter at each level follows — and the retention policy's decisions with the drop
 * log behind them. Guarded by the archive's state lock; whoever appends to its logs (or reads the drop log under that
 * lock) holds the append gate too, which the checkpoint holds alone while it forces them ({@link ArchiveLock}). A lookup
 * of an old drop reads the drop log holding neither ({@link DropLogLookup}).
 */
final class SnapshotRegistry implements AutoCloseable {
    /** Snapshot log records held before a compaction is tried; after one it waits until the log doubles. */
    static final long COMPACT_MIN_RECORDS = 4096;
    private final SnapshotLog log;
    private final DropLog drops;
    /** Per rank change, the Maplog position of every level at that moment, and each live raised snapshot's latest. */
    private final JoinLog joins;
    private final RankTree rankTree;
    /** While replaying, the raises still to replay: the policy and the budget keep their snapshots until then. */
    private final RaisesAhead raisesAhead = new RaisesAhead();
    private final RegistryDrops answers;
    private final int levels;
    private final TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
    /** The declarations the capture path counts at each level: of the live snapshots and those views read. */
    private final Declarations declared;
    /** Lazily ranked snapshots copied into a higher level (ranked extents): id → {level, Start at that level}. */
    private final Map<Long, long[]> moved = new HashMap<>();
    /** A copy lazy ranking owes: snapshot {@code id} into level {@code target}, joined at {@code positions}. */
    record Move(long id, int target, long[] positions) {
    }
    /** The latest snapshot declared. */
    private volatile long latest;
    /**
     * The WAL record of the latest declaration or raise, which a drop the clock finds may depend on: a keepFor age drops
     * a snapshot only once no level keeps it, and a declaration or raise may be what pushed it out of a keepLast window.
     */
    private long lastWindowChange;
    /** The highest id the recovered checkpoint mark knew of: ids up to it are never handed out again, even if replay does not re-declare them. */
    private volatile long floor;
    /** What {@link #prepare} kept of each log, cut to by {@link #cut}. */
    private long keptRecords;
    /** The latest snapshot the latest checkpoint mark recorded as declared: no compaction removes its record. */
    private volatile long latestAtMark;
    private long compactAt = COMPACT_MIN_RECORDS;
    /** The wall clock the retention policy reads (tests step it). */
    private volatile LongSupplier wallClock = System::currentTimeMillis;

    SnapshotRegistry(FileIOFactory io, Path dir, RankTreePolicy policy, int nodeEntries) {
        this(io, dir, policy, nodeEntries, MaplogFile.Missing.CREATE, MaplogFile.Missing.CREATE, new AtomicLong());
    }

    /**
     * Opens the logs in {@code dir}, reading only. {@code missing}: whether a missing snapshot or drop log is created
     * (a new archive) or corruption; {@code missingJoins} the same for the join log, which older archives lack.
     * {@code storeId}: the store's durable id (0 until a marker holds it), see {@link MaplogFile}.
     */
    SnapshotRegistry(FileIOFactory io, Path dir, RankTreePolicy policy, int nodeEntries, MaplogFile.Missing missing, MaplogFile.Missing missingJoins,
                     AtomicLong storeId) {
        this.rankTree = new RankTree(policy);
        this.levels = policy.levelCount();
        this.declared = new Declarations(levels);
        List<AutoCloseable> opened = new ArrayList<>();
        try {
            this.log = Closing.track(opened, new SnapshotLog(io, dir.resolve(SnapshotLogDescriptor.FILE), missing, storeId));
            this.drops = Closing.track(opened, new DropLog(io, dir, nodeEntries, missing, storeId));
            this.joins = new JoinLog(io, dir, levels, nodeEntries, missingJoins, storeId);
            this.answers = new RegistryDrops(log, drops, live::containsKey, this::latest);
        } catch (RuntimeException e) {
            Closing.closeAll(e, opened);
            throw e;
        }
    }

    /** Record counts of the snapshot, drop and join logs, appended or not: {snapshots, drops, joins} (at a checkpoint mark). */
    long[] counts() {
        return new long[]{log.records(), drops.count(), joins.count()};
    }

    /**
     * Recovery, reading only: checks that the logs hold what checkpoint mark {@code mark} made durable — its
     * declarations, drops and rank changes, and every snapshot id up to its latest — and rebuilds the declarations
     * before the mark (replay re-declares the later ones), their drops and their joins. Nothing is cut until
     * {@link #cut}; a log that lost part of that is a {@link CorruptionException} naming it.
     */
    void prepare(long markLsn, boolean emptyStore, ArchiveMarks.Mark mark) {
        log.checkDurable(mark.snapshots());
        drops.checkDurable(mark.drops());
        joins.checkDurable(mark.joins());
        List<SnapshotRecord> all = log.load(); // bounded by the live snapshots and the history since the latest checkpoint
        int held = 0;
        while (!emptyStore && held < all.size() && all.get(held).walLsn() < markLsn) held++;
        long kept = log.first() + held; // positions count the records compacted away too
        if (mark.snapshots() >= 0 && kept != mark.snapshots())
            throw new CorruptionException("the snapshot log holds " + kept + " records before checkpoint mark " + markLsn + " but the mark recorded "
                    + mark.snapshots(), log.path(), log.offsetOf(Math.max(log.first(), Math.min(kept, mark.snapshots()))));
        keptRecords = kept;
        live.clear();
        declared.clear();
        moved.clear();
        if (!emptyStore) log.retained().forEach(this::load); // the live ones below the horizon at the compaction, all before any mark since
        for (SnapshotRecord r : all.subList(0, held)) {
            if (r.id() < log.horizon() && !log.retains(r.id())) continue; // dropped before the log was compacted: its drop may be gone too
            load(r);
        }
        latest = live.isEmpty() ? 0 : live.lastKey();
        if (mark.latest() >= 0 && latest != mark.latest())
            throw new CorruptionException("the snapshot log's declarations before checkpoint mark " + markLsn + " end at snapshot " + latest
                    + " but the mark recorded snapshot " + mark.latest(), log.path(), log.offsetOf(kept));
        floor = Math.max(0, mark.highWater()); // ids handed out up to the mark's flush are never handed out again
        // what the recovered mark counts, as its flush noted it: the compactions right after recovery then let go of what
        // it dropped (knowing no such snapshot, they kept everything, and then waited for their logs to double again)
        latestAtMark = Math.max(0, mark.latest());
        long[] loaded = live.keySet().stream().mapToLong(Long::longValue).toArray();
        drops.recover(mark.drops(), log.horizon(), live);
        for (long id : loaded) if (!live.containsKey(id)) declared.dropped(id); // as a drop while open forgets it
        rankTree.reset(live.values(), mark.clock(), wallNow()); // the policy's clock goes on as the mark recorded it
        forgetBefore(oldestLive());
        joins.read(markLsn, emptyStore, mark.joins(), live::containsKey);
    }

    /**
     * Recovery, after {@link #prepare}: {@code level}'s Maplog, up to the mark, ends with a mapping for {@code snapshot}
     * (0 when it holds none), which the level's latest is never older than ({@link Declarations#mappedAt}).
     */
    void mappedUpTo(int level, long snapshot) {
        declared.mappedAt(level, snapshot, live::containsKey);
        forgetBefore(oldestLive()); // as prepare does: none older than the oldest live snapshot is counted
    }

    /** Recovery: applies a declaration, or (a later record of an id) a rank change, read back from the log. */
    private void load(SnapshotRecord r) {
        if (live.containsKey(r.id())) declared.counted(r.id(), r.rank(), live::containsKey);
        else declared.declared(r.id(), r.rank(), live::containsKey);
        live.put(r.id(), r);
    }

    /** Recovery, once the store is decided sound: cuts the logs to what {@link #prepare} kept. */
    void cut() {
        log.truncate(keptRecords);
        log.force();
        drops.cut();
        joins.cut();
    }

    /** The latest snapshot declared (what a checkpoint mark records as its latest). */
    long declaredLatest() {
        return latest;
    }

    /** The latest snapshot id handed out: declared, or known to the recovered checkpoint mark. */
    long latest() {
        return Math.max(latest, floor);
    }

    /**
     * The level snapshot {@code id} is read through: the level it was copied to by lazy ranking, else its declared
     * rank, capped at the top level.
     */
    int readLevel(long id) {
        long[] m = moved.get(id);
        return m != null ? (int) m[0] : Math.min(declared.declaredRank(id), levels);
    }

    /** Start of live snapshot {@code id} at its read level: where its SPT scan of that level's Maplog begins. */
    long readStart(SnapshotRecord r) {
        long[] m = moved.get(r.id());
        return m != null ? m[1] : r.start();
    }

    /** The level live snapshot {@code id} was copied to by lazy ranking, 0 when it was not. */
    int movedTo(long id) {
        long[] m = moved.get(id);
        return m == null ? 0 : (int) m[0];
    }

    /** Records that {@code id} is now read through {@code level}, whose Maplog it scans from {@code start}. */
    void moved(long id, int level, long start) {
        moved.put(id, new long[]{level, start});
    }

    /**
     * Lazy segregation: live snapshots ranked above the level they are read through that have left the page
     * window (at least {@code window} newer snapshots exist), as {id, target level}, oldest first.
     */
    List<Move> dueForMove(int window) {
        List<Move> due = new ArrayList<>();
        for (SnapshotRecord r : live.headMap(latest - window, true).values()) {
            int target = Math.min(r.rank(), levels);
            long[] joined = joins.positions(r.id()); // none for a raise made before archives kept joins.log: it stays put
            if (target > readLevel(r.id()) && joined != null) due.add(new Move(r.id(), target, joined.clone()));
        }
        return due;
    }

    /**
     * The lowest Maplog position of {@code level} a live snapshot's scan may start at: its Start there when it is
     * read through that level, and every level's position at its latest raise (a copy's source end, its Start at
     * the new level, another copy's diff bases). Long.MAX_VALUE when none.
     */
    long firstScanned(int level) {
        long min = Long.MAX_VALUE;
        for (SnapshotRecord r : live.values()) {
            if (readLevel(r.id()) == level) min = Math.min(min, readStart(r));
            long[] joined = joins.positions(r.id());
            if (joined != null) min = Math.min(min, joined[level - 1]);
        }
        return min;
    }

    /**
     * Start, at {@code level}, of the latest live snapshot older than {@code id} read through that level: from there
     * the level's Maplog maps the page-based pre-states that serve as diff bases for {@code id}. -1 when none.
     */
    long baseStart(long id, int level) {
        for (SnapshotRecord r : live.headMap(id, false).descendingMap().values()) {
            if (readLevel(r.id()) == level) return readStart(r);
            long[] joined = joins.positions(r.id());
            if (joined != null && Math.min(r.rank(), levels) >= level) return joined[level - 1];
        }
        return -1;
    }

    /** The latest snapshot counted at {@code level}, 0 when none. */
    long latestAt(int level) {
        return declared.latestAt(level);
    }

    /** A page's SavedAfter at {@code level}: the latest snapshot counted there not after its SavedAfter. */
    long savedAfterAt(int level, long savedAfter) {
        return declared.savedAfterAt(level, savedAfter);
    }

    /**
     * Declares {@code id} whose Start at its read level is {@code start}. Ids increase by one, except that the first
     * new one after a recovery whose replay did not re-declare every id the mark knew of skips past them.
     */
    void declare(long id, int rank, long declaredMillis, long walLsn, java.util.function.IntToLongFunction startAtLevel) {
        long expected = id <= floor ? latest + 1 : latest() + 1;
        if (id != expected) throw new IllegalStateException("snapshot " + id + " declared after " + latest + " (ids up to " + floor + " handed out)");
        declared.declared(id, rank, live::containsKey);
        SnapshotRecord r = new SnapshotRecord(id, rank, declaredMillis, startAtLevel.applyAsLong(readLevel(id)), walLsn);
        log.append(r);
        live.put(id, r);
        rankTree.add(r);
        latest = id;
        lastWindowChange = Math.max(lastWindowChange, walLsn);
        enforce(declaredMillis, false, walLsn);
    }

    /**
     * Raises a live snapshot's rank, when every level's Maplog stood at {@code positions}; false when it is not live.
     * The policy is then applied at the wall clock's time when {@code clockRead}; replay reads no clock (see
     * {@link SnapshotArchive#replaying(long[])}) and applies it at the policy's latest time, or the snapshot's declared
     * time if later, both times the raise was not before.
     */
    boolean rank(long id, int rank, long walLsn, long[] positions, boolean clockRead) {
        SnapshotRecord r = live.get(id);
        if (r == null) return false;
        raisesAhead.replayed(id);
        if (rank < r.rank()) throw new IllegalArgumentException("snapshot " + id + " has rank " + r.rank() + "; a rank can only be raised, not to " + rank);
        SnapshotRecord raised = new SnapshotRecord(id, rank, r.declaredMillis(), r.start(), walLsn);
        log.append(raised);
        live.put(id, raised);
        rankTree.raise(r, raised);
        if (rank > r.rank()) {
            joins.raised(id, walLsn, positions);
        }
        declared.counted(id, rank, live::containsKey); // pages first changed from now on record their pre-state as of it at the new levels too
        lastWindowChange = Math.max(lastWindowChange, walLsn);
        enforce(clockRead ? wallNow() : r.declaredMillis(), clockRead, walLsn);
        return true;
    }

    /**
     * The retention policy's clock, for a checkpoint mark to record ({@link PolicyClock}): at the wall clock's time when
     * {@code clockRead}; replay reads no clock (see {@link SnapshotArchive#replaying(long[])}) and records the policy's clock
     * as its records left it ({@link RankTree#clockAsRead}).
     */
    PolicyClock policyClock(boolean clockRead) {
        return clockRead ? rankTree.clock(live::get, wallNow()) : rankTree.clockAsRead(live::get);
    }

    /** The wall-clock time the retention policy reads now. */
    long wallNow() {
        return wallClock.getAsLong();
    }

    /** Tests: the wall clock the retention policy reads from now on. */
    void wallClock(LongSupplier clock) {
        wallClock = clock;
    }

    /** The WAL record of the latest declaration or raise (0 when none since the open): see {@link #lastWindowChange}. */
    long lastWindowChange() {
        return lastWindowChange;
    }

    /**
     * Drops what the policy no longer keeps at {@code nowMillis}: read under the state lock, or a declaration's time (see
     * RankTree#drops), because of the WAL record at {@code causeLsn} (a declaration or a raise; for the clock, the latest
     * of them: {@link #lastWindowChange}).
     */
    void enforce(long nowMillis, boolean clockRead, long causeLsn) {
        for (RankTree.Verdict v : rankTree.drops(live::get, nowMillis, clockRead)) {
            // kept until its raise, where the policy decides again as the live run did (see RaisesAhead)
            if (raisesAhead.holds(v.id())) rankTree.candidate(v.id());
            else drop(v.id(), v.why(), DropLogLookup.DROPPED_BY_POLICY, causeLsn);
        }
        forgetBefore(oldestLive());
    }

    /** Replay will apply a raise of each of {@code ids}, one per record (none once it is over): see {@link RaisesAhead}. */
    void raisesAhead(long[] ids) {
        raisesAhead.expect(ids);
    }

    /** Declarations held in memory, over all levels (tests: it follows the live snapshots). */
    int remembered() {
        return declared.remembered();
    }

    /** See {@link Declarations#pin}. */
    void pin(long id) {
        declared.pin(id);
    }

    /** The oldest snapshot an open view reads (everything archived from its declaration on stays), MAX_VALUE when none. */
    long oldestViewed() {
        return declared.oldestViewed();
    }

    /** A view of {@code id} closed; its declaration is forgotten if the snapshot was dropped. */
    void unpin(long id) {
        declared.unpin(id, live::containsKey);
    }

    /** The oldest live snapshot, or the next id when none is live. */
    long oldestLive() {
        return live.isEmpty() ? latest() + 1 : live.firstKey();
    }

    /** Keeps the heap proportional to the live snapshots: see {@link Declarations}. */
    private void forgetBefore(long oldest) {
        declared.forgetBefore(oldest);
    }

    /**
     * The budget: drops live snapshots — lowest rank first, so a level's rule loses nothing while a lower level still
     * has snapshots, and oldest first within a rank; never the latest, nor while replaying one whose raise is still ahead
     * ({@link RaisesAhead}) — until the archive bytes attributed to them
     * ({@code bytesOf}) reach {@code excess}, because of the WAL record at {@code causeLsn} (MAX_VALUE: the writes appended
     * so far, whose pre-states passed the budget). Returns those bytes; reclamation gives them back whole segments at a time.
     */
    long dropForBudget(long excess, long budget, LongUnaryOperator bytesOf, long causeLsn) {
        List<SnapshotRecord> order = new ArrayList<>(live.values());
        order.sort(Comparator.comparingInt((SnapshotRecord r) -> Math.min(r.rank(), levels)).thenComparingLong(SnapshotRecord::id));
        long freed = 0;
        for (SnapshotRecord r : order) {
            if (freed >= excess) break;
            if (r.id() == latest || raisesAhead.holds(r.id())) continue; // the live run kept it until its raise
            freed += bytesOf.applyAsLong(r.id());
            drop(r.id(), budgetWhy(budget), DropLogLookup.DROPPED_BY_BUDGET, causeLsn);
        }
        forgetBefore(oldestLive());
        return freed;
    }

    private static String budgetWhy(long budget) {
        return "the archive passed its budget of " + budget + " bytes, and no snapshot of a lower rank or older was left to drop first";
    }

    private void drop(long id, String why, long kind, long causeLsn) {
        SnapshotRecord r = live.remove(id);
        int rank = r.rank();
        rankTree.remove(r);
        moved.remove(id);
        joins.dropped(id);
        declared.dropped(id); // wherever it lies: a snapshot kept for good does not keep every declaration after it
        drops.append(id, rank, kind, why, causeLsn);
    }

    /** What was dropped and why, and the drop horizon: see {@link RegistryDrops}. */
    RegistryDrops drops() {
        return answers;
    }

    /** The checkpoint's flush recorded its mark, which counts the snapshots declared up to {@code latestDeclared}. */
    void marked(long latestDeclared) {
        latestAtMark = latestDeclared;
    }

    /**
     * Under the state lock, after a checkpoint's end marker: see {@link CompactionPlan}. The live snapshots are taken
     * only when a log is due ({@code movesDue}: the move log), once per doubling of that log, not at every checkpoint.
     */
    CompactionPlan compactionPlan(boolean movesDue) {
        long held = log.records() - log.first() + log.retained().size();
        boolean logDue = latestAtMark > log.horizon() && held >= compactAt;
        long[] upToMark = logDue || movesDue || joins.due()
                ? live.headMap(latestAtMark, true).keySet().stream().mapToLong(Long::longValue).toArray() : null;
        return new CompactionPlan(Math.min(oldestLive(), latestAtMark), latestAtMark, upToMark, logDue);
    }

    /**
     * Holding the append gate, once the drops behind {@code plan} are durable and no recovery can use a mark before
     * the latest, {@code markLsn}: compacts the snapshot log when it has grown enough since the last try that the
     * rewrite is paid for by its growth — without the records of every snapshot below the plan's log horizon that was
     * not live, wherever it lies — then the drop log below the snapshot log's horizon, keeping the drops of the
     * snapshots it retains (that order: a drop log entry below the horizon is only ever found beside a horizon that
     * covers it, and a retained snapshot's drop stays beside its retained record), and the join log ({@link JoinLog#compact}).
     */
    void compactLogs(CompactionPlan plan, long markLsn) {
        if (plan.logDue()) {
            log.compact(plan.logHorizon(), System.currentTimeMillis(), plan.live());
            compactAt = Math.max(COMPACT_MIN_RECORDS, 2 * (log.records() - log.first() + log.retained().size()));
        }
        drops.compactBelow(log.horizon(), log::retains);
        joins.compact(plan, markLsn);
    }

    SnapshotRecord find(long id) {
        return live.get(id);
    }

    /** The number of live snapshots. */
    int liveCount() {
        return live.size();
    }

    /** The level whose rule keeps live snapshot {@code id} now ({@link RankTree#keptAt}); 0 when none does or it is not live. */
    int keptAt(long id) {
        SnapshotRecord r = live.get(id);
        return r == null ? 0 : rankTree.keptAt(r, wallNow());
    }

    List<SnapshotRecord> live() {
        return new ArrayList<>(live.values());
    }

    /** Live snapshots read through {@code level} or below. */
    TreeSet<Long> readingUpTo(int level) {
        TreeSet<Long> ids = new TreeSet<>();
        for (SnapshotRecord r : live.values()) if (readLevel(r.id()) <= level) ids.add(r.id());
        return ids;
    }

    /** Makes declarations and drops durable. */
    void force() {
        log.force();
        drops.force();
        joins.force();
    }

    /** The WAL whose records cause drops: no drop is written before its cause is durable ({@link DropLog}). */
    void wal(WalDurability wal) {
        drops.wal(wal);
    }

    /** Holding no lock, before {@link #force} or {@link #forceDrops}: see {@link DropLog#forceCauses}. */
    void forceDropCauses() {
        drops.forceCauses();
    }

    /** Makes drops durable (before reclamation deletes what only dropped snapshots needed), and so the WAL records that caused them. */
    void forceDrops() {
        drops.force();
    }

    @Override
    public void close() {
        Closeables.closeAll(log, drops, joins);
    }
}
