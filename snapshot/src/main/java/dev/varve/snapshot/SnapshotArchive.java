package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.Closeables;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.memory.PageSlots;
import dev.varve.core.spi.CheckpointListener;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The split-snapshot archive (Retro), segregated by rank level (Thresher): per level a Pagelog volume and a Maplog
 * with Skippy levels ({@link ArchiveLevel}); Start(v) in the snapshot log; SavedAfter in page headers. This class
 * opens the archive's files ({@link ArchiveFiles}) and coordinates the roles that work on them; it holds no logic of
 * its own.
 *
 * <p>Design note. Each level is a complete Retro archive of its own snapshots (those of rank &gt;= the level). A
 * page's SavedAfter at level j follows from its SavedAfter (level 1, in the header) and the declared ranks: the
 * latest snapshot of rank &gt;= j not after it. A pre-state is recorded by every level whose latest snapshot is
 * newer than that, stored once in the volume of the highest of them, and mapped in each of their Maplogs. A
 * snapshot of declared rank r is read through level min(r, k). The roles:
 * <ul>
 *   <li>{@link CapturePath} — on the writer's path ({@link Capture} is the page-memory hook): numbers a captured
 *       pre-state and hands out its Maplog positions and volume address;</li>
 *   <li>{@link PendingCaptures} — the captures on their way, which the {@link Archiver} agent drains to the volumes
 *       and Maplogs in capture order; waits for the archiver, with deadlines;</li>
 *   <li>{@link CheckpointFlush} — at each checkpoint mark notes the positions, and before the start marker makes
 *       everything up to there durable, volumes before Maplogs before Start (I4, I5), recording the mark
 *       ({@link ArchiveMarks});</li>
 *   <li>{@link ArchiveRecovery} — checks every file against the recovered mark, then cuts every level and log back
 *       to it; replay from the mark re-declares the later snapshots and re-captures their pre-states (I6);</li>
 *   <li>{@link RetentionEnforcer} — the policy's rules and its byte budget (lowest rank's oldest first);</li>
 *   <li>{@link LazyRanker} — Thresher's lazy segregation: a raised snapshot out of the page window W is copied into
 *       a {@link RankedExtent} at its new level at the next mark ({@link RankedExtents} holds them);</li>
 *   <li>{@link Reclaimer} — after each checkpoint, whole Pagelog segments, Maplog portions and extents (I8), and the
 *       fragmentation it cannot give back; {@link ReclamationCheck} verifies I8;</li>
 *   <li>{@link OpenViews} — the snapshot page tables of open as-of views, which pin what they read;</li>
 *   <li>{@link DropQueries} — what was dropped and why, the drop log read outside the state lock.</li>
 * </ul>
 *
 * <p>Locks ({@link ArchiveLock}). One state lock guards capture numbering, the pending queue, declarations, the
 * extents and the views' tables; it is held for memory work only. Page images are copied, written and read outside
 * it, and no fsync runs under it: the checkpoint's flush and reclamation force the files under the append gate
 * alone, which the archiver, declarations, rank changes and drops take before the state lock, so the logs stay still
 * while they sync and a capture never waits for the disk. Recovery cuts the files under the state lock before
 * capture is turned on.
 */
public final class SnapshotArchive implements CheckpointListener, AutoCloseable {
    private final ArchiveLevel[] levels;
    private final ArchiveMarks marks;
    private final MoveLog moves;
    private final SnapshotRegistry registry;
    private final ArchiveLock lock = new ArchiveLock();
    /** The store's id once a checkpoint marker holds it, else 0; shared by the volumes and logs (see {@link Pagelog}, {@link MaplogFile}). */
    private final AtomicLong storeId;
    private final RankedExtents extents = new RankedExtents();
    private final Capture capture;
    private final Archiver archiver;
    /** The capture buffer, whose memory is allocated as captures first use it. */
    private final PageSlots slots;
    private final OpenViews views;
    private final RetentionEnforcer retention;
    private final PendingCaptures pending;
    private final CapturePath captures;
    private final LazyRanker ranker;
    private final CheckpointFlush flush;
    private final Reclaimer reclaimer;
    private final ReclamationCheck check;
    private final ArchiveRecovery recovery;
    private final DropQueries drops;
    /** Whether open is replaying the WAL ({@link #replaying(long[])}). */
    private volatile boolean replaying;

    /**
     * Opens (or creates) the archive in the settings' directory; nothing is captured until {@link #recover}. Lazily
     * ranked snapshots are copied into their level once the settings' page window of newer snapshots exist.
     */
    public SnapshotArchive(FileIOFactory io, ArchiveSettings settings) {
        int pageSize = settings.pageSize();
        this.storeId = new AtomicLong(settings.storeId());
        RankTreePolicy policy = settings.retention();
        // the capture buffer before the files: a buffer that cannot be allocated fails the open with no file left open
        this.slots = new PageSlots(settings.captureBufferBytes(), pageSize, "captureBufferSize");
        ArchiveFiles files = ArchiveFiles.open(io, settings, storeId);
        this.levels = files.levels();
        this.registry = files.registry();
        this.moves = files.moves();
        this.marks = files.marks();
        this.archiver = new Archiver(this);
        this.views = new OpenViews(lock, io, levels, registry, extents, slots);
        this.retention = new RetentionEnforcer(lock, registry, extents, pageSize, policy.budgetBytes().orElse(-1), this::bytes);
        this.pending = new PendingCaptures(lock, archiver, levels, slots, views, retention);
        this.captures = new CapturePath(lock, levels, registry, slots, pending, views, settings.diffChain());
        this.capture = new Capture(captures);
        this.ranker = new LazyRanker(lock, io, levels, registry, moves, extents, pageSize, storeId);
        this.flush = new CheckpointFlush(lock, levels, registry, moves, marks, captures, pending, ranker, settings.pageWindow());
        this.reclaimer = new Reclaimer(lock, io, levels, registry, extents, views, retention, marks, moves);
        this.check = new ReclamationCheck(lock, io, levels, registry, extents);
        this.recovery = new ArchiveRecovery(lock, io, settings.dir(), pageSize, levels, registry, moves, marks, extents, retention, storeId);
        this.drops = new DropQueries(lock, registry);
    }

    /**
     * Refuses, before anything is created, to open the archive at {@code dir} for a store that has completed a
     * checkpoint ({@code storeDir}) when the archive holds no checkpoint marks ({@link ArchiveRecovery#refuseMissing}).
     */
    public static void refuseMissing(FileIOFactory io, Path dir, Path storeDir) {
        ArchiveRecovery.refuseMissing(io, dir, storeDir);
    }

    /** Whether {@code dir} holds an archive's files (its marks or snapshot log): a directory no other store may lie in. */
    public static boolean holdsArchive(Path dir) {
        return Files.exists(dir.resolve(ArchiveMarksDescriptor.FILE)) || Files.exists(dir.resolve(SnapshotLogDescriptor.FILE));
    }

    /**
     * Refuses, before anything is created, to open another store's archive at {@code dir} for a store that has
     * completed no checkpoint, whose WAL ends at {@code walEnd} ({@link ArchiveRecovery#refuseForeign}).
     */
    public static void refuseForeign(FileIOFactory io, Path dir, int skippyNodeEntries, Path storeDir, long walEnd) {
        ArchiveRecovery.refuseForeign(io, dir, skippyNodeEntries, storeDir, walEnd);
    }

    /** Steps the archiver with {@code agents} (by hand when {@link Agents#invoked}); call before {@link #recover}. */
    public void useAgents(Agents agents) {
        archiver.agents(agents);
    }

    /**
     * The store's WAL, whose declarations and rank raises cause the policy's drops: no drop is written to the drop log
     * before the record that caused it is durable (see {@link WalDurability}). Call before {@link #recover}.
     */
    public void wal(WalDurability wal) {
        registry.wal(wal);
    }

    /**
     * Open, before {@link #recover}: until {@link #replayed}, the policy is applied by the replayed records alone: the
     * archiver checks nothing of its own (keepFor by the wall clock, the budget), a replayed raise reads no clock, and
     * a mark replay takes records the policy's clock as the records left it. By today's clock, past every record
     * replayed, they dropped a snapshot aged out at its old rank before its raise, acknowledged before the crash, was
     * replayed (the mark's clock did so in the replay after a second crash, which starts from that mark).
     * {@code raised}: the snapshot of each rank record replay will apply, one per record; each stays live until its
     * last raise is replayed, whatever the policy or the budget decides before ({@link RaisesAhead}).
     */
    public void replaying(long[] raised) {
        Objects.requireNonNull(raised, "raised: the snapshot of each rank record replay will apply (none: empty)");
        replaying = true;
        retention.raisesAhead(raised);
    }

    /**
     * Open, once replay is over: applies the policy at today's clock to the ranks the records gave, as the archiver's
     * checks do from now on, so that the open drops what the policy no longer keeps (a tightened one, an age passed).
     */
    public void replayed() {
        retention.raisesAhead(new long[0]);
        replaying = false;
        retention.enforce();
    }

    /** Whether open is replaying the WAL ({@link #replaying(long[])}): the archiver skips its checks meanwhile. */
    boolean isReplaying() {
        return replaying;
    }

    /** Registers the capture hook with page memory (after any physical-WAL hook, so its deltas see SavedAfter change). */
    public void attach(PageMemory memory) {
        memory.addWriteHook(capture);
    }

    /**
     * Checks the archive against the recovered checkpoint mark ({@code markLsn}; {@code emptyStore} when no checkpoint
     * ever completed), reading only: a damaged one is refused with a {@link CorruptionException} naming the file. Open
     * calls it once it has decided its WAL and markers are sound, before it writes anything.
     */
    public void check(long markLsn, boolean emptyStore) {
        recovery.check(markLsn, emptyStore);
    }

    /**
     * Retro stage 1: cuts the archive back to the recovered checkpoint mark ({@link ArchiveRecovery}; checking it
     * first unless {@link #check} of the same mark did) and turns capture on for logical replay.
     */
    public void recover(long markLsn, boolean emptyStore) {
        reclaimer.resumeCounts(recovery.recover(markLsn, emptyStore));
        // what the last run dropped but did not reclaim (it reclaims after checkpoints) goes now, before replay's
        // declarations weigh the budget against the archive's size: nothing in memory says it is on its way out
        if (!emptyStore) reclaimer.afterEndMarker(markLsn);
        capture.enabled(true);
        archiver.start(); // replay captures too, and its checkpoints wait for the archive
    }

    // ---------------------------------------------------------------- declarations

    /**
     * Latest snapshot id handed out, 0 when none: declared, or known to the recovered checkpoint mark (ids are never
     * handed out twice, even when replay does not re-declare every one of them).
     */
    public long latest() {
        return registry.latest();
    }

    /**
     * Every snapshot below this id that is not live was dropped, and when and why are no longer kept beyond the most
     * recent drops: the logs' records of them were compacted away, by {@link #dropHorizonMillis}. The live ones below it
     * (kept for good, say) kept their records. 0 while nothing was compacted.
     */
    public long dropHorizon() {
        return registry.drops().dropHorizon();
    }

    /** When {@link #dropHorizon} was set (epoch millis): the snapshots below it not live were all dropped by then. */
    public long dropHorizonMillis() {
        return registry.drops().dropHorizonMillis();
    }

    /** The id the next declaration gets. */
    public long nextId() {
        return registry.latest() + 1;
    }

    /**
     * Declares snapshot {@code id} — called with no write in flight (under the checkpoint write lock), right after
     * its snaprec was appended at {@code walLsn}; replay calls it for each snaprec after the recovered mark.
     */
    public void declare(long id, int rank, long declaredMillis, long walLsn) {
        lock.lockWithAppends();
        try {
            registry.declare(id, rank, declaredMillis, walLsn, level -> levels[level - 1].nextMapping);
            retention.declared(walLsn);
        } finally {
            lock.unlockWithAppends();
        }
    }

    /**
     * Lazy ranking: raises live snapshot {@code id} to {@code rank}; {@code log} appends the raise's WAL record and
     * returns its LSN. A snapshot the policy has dropped is not raised, and {@code log} is not called.
     *
     * <p>The record is logged holding the append gate, which every drop takes (the archiver's keepFor and budget
     * checks run without the store's checkpoint lock): no drop comes between finding the snapshot live and raising
     * it. Logged first and refused after, a raise would take effect after a crash that lost the drop, when replay found
     * the snapshot live. The state lock is not held while {@code log} appends: a WAL append may wait for its disk.
     *
     * @return the raise's LSN, or -1 when the snapshot is not live (nothing was logged)
     */
    public long rank(long id, int rank, LongSupplier log) {
        lock.lockAppends();
        try {
            if (find(id) == null) return -1;
            long walLsn = log.getAsLong();
            lock.lock();
            try {
                long[] positions = new long[levels.length];
                for (ArchiveLevel l : levels) positions[l.level - 1] = l.nextMapping;
                if (!registry.rank(id, rank, walLsn, positions, !replaying))
                    throw new IllegalStateException("snapshot " + id + " was dropped while its raise held the archive's append gate, which every drop takes");
                return walLsn;
            } finally {
                lock.unlock();
            }
        } finally {
            lock.unlockAppends();
        }
    }

    /**
     * Replay: raises live snapshot {@code id} to {@code rank}, logged at {@code walLsn}, as {@link #rank(long, int,
     * LongSupplier)} did; called again for each rank record after the recovered mark.
     *
     * @return false when the policy has dropped the snapshot since: it stays dropped
     */
    public boolean rank(long id, int rank, long walLsn) {
        return rank(id, rank, () -> walLsn) >= 0;
    }

    /** Applies the retention policy now (keepFor rules age); the archiver calls it periodically. */
    public void enforce() {
        retention.enforce();
    }

    /** Tests: the wall clock the retention policy reads, stepped as NTP or an operator would step the host's. */
    void wallClock(java.util.function.LongSupplier clock) {
        registry.wallClock(clock);
    }

    /** Why {@code id} is no longer live, or null if it is live or was never declared ({@link DropQueries}). */
    public DroppedSnapshot dropped(long id) {
        return drops.dropped(id);
    }

    /** Every drop the archive still details, by id: those the drop log holds, each as {@link #dropped} tells it. */
    public List<DroppedSnapshot> detailedDrops() {
        return drops.detailedDrops();
    }

    /** The drops of the {@code max} latest dropped snapshots, newest first, each as {@link #dropped} tells it. */
    public List<DroppedSnapshot> latestDrops(int max) {
        return drops.latestDrops(max);
    }

    /** The declaration of live snapshot {@code id}, or null (never declared, or dropped by the policy). */
    public SnapshotRecord find(long id) {
        return lock.read(() -> registry.find(id));
    }

    /** The rank level whose rule keeps live snapshot {@code id} now, 0 when none does (it goes at the next check) or it is not live. */
    public int keptAt(long id) {
        return lock.read(() -> registry.keptAt(id));
    }

    /** Every live snapshot, oldest first. */
    public List<SnapshotRecord> snapshots() {
        return lock.read(registry::live);
    }

    // ---------------------------------------------------------------- sizes and metrics

    /** Archive bytes held for snapshot {@code id}: its captured pre-states as stored, their mappings and its ranked extent. */
    public long archiveBytes(long id) {
        return retention.archiveBytes(id);
    }

    /** Time writers waited for room in the capture buffer (the archiver's back-pressure), since open. */
    public long captureWaitNanos() {
        return captures.captureWaitNanos();
    }

    /** Bytes the archive holds on disk. */
    public long bytes() {
        long b = 0;
        for (long l : bytesPerLevel()) b += l;
        return b;
    }

    /** Bytes each level's region holds (volume, Maplog and ranked extents), level 1 first. */
    public long[] bytesPerLevel() {
        long[] out = new long[levels.length];
        for (ArchiveLevel l : levels) out[l.level - 1] = l.bytes();
        lock.lock();
        try {
            extents.addBytes(out);
        } finally {
            lock.unlock();
        }
        return out;
    }

    /** Bytes lazy ranking wrote into ranked extents since open. */
    public long copiedByRankingBytes() {
        return ranker.copiedBytes();
    }

    /** Diff compactness R of the pages lazy ranking copied since open: diff bytes over full-page bytes; NaN before any. */
    public double diffCompactness() {
        return ranker.diffCompactness();
    }

    /** Fragmentation: dead pre-states behind live ones, which whole-segment reclamation cannot give back (see {@link Reclaimer}). */
    public long deadBytesInLiveSegments() {
        return reclaimer.deadBytesInLiveSegments();
    }

    /** Archive bytes given back by reclamation since open. */
    public long reclaimedBytes() {
        return reclaimer.reclaimedBytes();
    }

    /**
     * I8 check: builds SPT(v) of every live snapshot and lists the mappings that point at reclaimed data (empty when
     * the invariant holds). For tests and tools; reads every Maplog from each Start.
     */
    public List<String> reachableButReclaimed() {
        return check.reachableButReclaimed();
    }

    /** The archiver's step: archives the oldest pending captures; false when none was pending. Archiver thread only. */
    boolean archiveNext() {
        return pending.archiveNext();
    }

    /** Whether the archiver may rest past its idle period: no capture is pending (see {@link PendingCaptures#rest}). */
    boolean archiverMayRest() {
        return pending.rest();
    }

    /** Whether the archiver should archive now rather than let captures gather. Archiver thread only. */
    boolean archiveDue() {
        return pending.due();
    }

    void failed(Throwable t) {
        pending.failed(t);
    }

    // ---------------------------------------------------------------- checkpoint protocol

    @Override
    public void onMark(long checkpointId, long markLsn) {
        flush.onMark(!replaying); // a mark replay takes records the time its records reached, not the reopen's
    }

    /** Segments and log parts the archive creates or rewrites from now on record the store's id, which a checkpoint marker now holds. */
    @Override
    public void storeIdDurable(long id) {
        storeId.set(id);
    }

    @Override
    public void beforeStartMarker(long checkpointId, long markLsn) {
        flush.flush(markLsn);
    }

    @Override
    public void afterEndMarker(long checkpointId, long markLsn) {
        reclaimer.afterEndMarker(markLsn);
    }

    /** A store that no longer writes still gives back what was dropped since (a keepFor rule ageing, the budget). */
    @Override
    public void whileIdle(long checkpointId, long markLsn) {
        if (reclaimer.dropsSinceReclaimed()) reclaimer.afterEndMarker(markLsn);
    }

    // ---------------------------------------------------------------- views

    /** Builds SPT(v) for snapshot {@code r} and keeps it current until {@link #closeView}; null when it was dropped meanwhile. */
    SnapshotPageTable openView(SnapshotRecord r) {
        return views.open(r, pending);
    }

    void closeView(SnapshotPageTable spt) {
        views.close(spt);
    }

    /** Copies the archived image of {@code pageId} as of the view's snapshot into {@code dst}; false when SPT lacks it. */
    boolean readArchived(SnapshotPageTable spt, long pageId, ByteBuffer dst, int offset) {
        return views.readArchived(spt, pageId, dst, offset);
    }

    /** The error for a page a view needs that changed after its snapshot but has no archived pre-state. */
    StorageException noPreState(SnapshotPageTable spt, long pageId) {
        return views.noPreState(spt, pageId);
    }

    /** Level {@code level}'s Maplog with its Skippy levels (tests). */
    Skippy maplog(int level) {
        return levels[level - 1].maplog;
    }

    /** The level live snapshot {@code id} is read through (tests: a reopen reads it back the same). */
    int readLevel(long id) {
        return lock.read(() -> registry.readLevel(id));
    }

    /** Level {@code level}'s volume (tests that break the reclamation order on purpose). */
    Pagelog volume(int level) {
        return levels[level - 1].volume;
    }

    @Override
    public void close() {
        try {
            archiver.stop();
            slots.awaitAllocations();
        } finally {
            List<AutoCloseable> parts = new ArrayList<>(List.of(levels));
            parts.addAll(List.of(registry, marks, moves));
            Closeables.closeAll(parts.toArray(new AutoCloseable[0]));
        }
    }
}
