package dev.varve.snapshot;

import dev.varve.core.util.LongLongMap;

import dev.varve.core.agent.Agents;
import dev.varve.core.io.Closeables;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.memory.Frame;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.memory.PageSlots;
import dev.varve.core.page.PageId;
import dev.varve.core.spi.CheckpointListener;
import dev.varve.config.RankTreePolicy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The split-snapshot archive (Retro), segregated by rank level (Thresher): per level a Pagelog volume and a Maplog
 * with Skippy levels ({@link ArchiveLevel}); Start(v) in the snapshot log; SavedAfter in page headers; the capture
 * path, the archiver, retention and reclamation, and the snapshot page tables of open views.
 *
 * <p>Design note. Each level is a complete Retro archive of its own snapshots (those of rank &gt;= the level). A
 * page's SavedAfter at level j follows from its SavedAfter (level 1, in the header) and the declared ranks: the
 * latest snapshot of rank &gt;= j not after it. A pre-state is recorded by every level whose latest snapshot is
 * newer than that, stored once in the volume of the highest of them, and mapped in each of their Maplogs. A
 * snapshot of declared rank r is read through level min(r, k). Positions and addresses are handed out when a
 * pre-state is captured and written by the archiver in capture order; at each checkpoint mark the archive notes
 * them, and before the start marker makes everything up to there durable — volumes before Maplogs before Start
 * (I4, I5) — with a record of the mark ({@link ArchiveMarks}: positions, addresses, every log's record count, the
 * snapshot ids). Opening only reads; recovery first checks every file against the recovered mark, then cuts every
 * level and log back to it; replay from the mark re-declares the later snapshots and re-captures their pre-states
 * deterministically (I6).
 *
 * <p>Lazy ranking (Thresher's lazy segregation, with the hybrid page window W). A raise adds the snapshot to the new
 * levels at once, so pages first changed after it are recorded there; every level's Maplog position at the raise
 * is logged (the join). While the snapshot is among the W most recent it is read page-based at its old level. At
 * the first checkpoint mark after it leaves the window, the pages first changed between declaration and join are
 * copied into a {@link RankedExtent} at the new level as byte-range diffs against that level's pre-states (pinned
 * there while the extent lives), the move is logged with the mark, and reads switch to extent + new level.
 *
 * <p>Reclamation after each checkpoint: whole Pagelog segments in temporal order (I8, below the mark and below any
 * extent's bases), whole Maplog portions before the first position any live snapshot or view scans from, extents
 * of dropped snapshots no view reads. The byte budget drops the lowest rank's oldest snapshots first.
 *
 * <p>One lock guards capture numbering, the pending queue, declarations and the views' tables; page images are
 * copied and written outside it.
 */
public final class SnapshotArchive implements CheckpointListener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SnapshotArchive.class);
    private static final long WAIT_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(120);
    /** Captures the archiver writes with one Pagelog write. */
    private static final int ARCHIVE_BATCH = 256;
    /** A file larger than this holds records, not just a header (every archive file's header is at most this long). */
    private static final int HEADER_BYTES = MaplogFile.HEADER;

    private final FileIOFactory io;
    private final Path dir;
    private final int pageSize;
    private final int pageWindow;
    /** The policy's archive budget in bytes, -1 when none. */
    private final long budget;
    private final ArchiveLevel[] levels;
    private final ArchiveMarks marks;
    private final MoveLog moves;
    private final SnapshotRegistry registry;
    private final PageSlots slots;
    private final Capture capture;
    private final Archiver archiver;
    private final ReentrantLock lock = new ReentrantLock();

    // guarded by lock
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private final List<SnapshotPageTable> views = new ArrayList<>();
    /** Pre-states first captured for each snapshot from the oldest live one on. */
    private final TreeMap<Long, long[]> capturesPerSnapshot = new TreeMap<>();
    /** The current ranked extent of each lazily ranked snapshot that was copied. */
    private final Map<Long, RankedExtent> extents = new HashMap<>();
    /** Extents replaced by a later copy or of dropped snapshots, deleted once no open view reads them. */
    private final List<RankedExtent> retired = new ArrayList<>();
    /** The lazy-ranking copies decided at the latest checkpoint mark: {snapshot, target level}. */
    private List<SnapshotRegistry.Move> dueAtMark = List.of();
    private long nextCapture;
    private long markCapture;
    /** At the latest checkpoint mark: the snapshot, drop and join logs' record counts, and the latest declared id. */
    private long[] logsAtMark = new long[3];
    private long latestAtMark;
    /** Bytes attributed to snapshots the budget dropped since the last reclamation: not given back yet. */
    private long budgetPending;

    private final LongAdder copiedBytes = new LongAdder();
    private final LongAdder copiedDiffBytes = new LongAdder();
    private final LongAdder copiedPages = new LongAdder();

    private final LongAdder captureWaitNanos = new LongAdder();
    private volatile long archived;
    private volatile Throwable failure;

    /**
     * One captured pre-state on its way to the archive: recorded by the levels in {@code levelMask}, at Maplog
     * {@code positions[j - 1]} with snapshot {@code stamps[j - 1]}, stored in {@code volume} at {@code address};
     * needed by no snapshot outside ({@code lo}, {@code hi}].
     */
    private record Pending(long number, long pageId, int slot, int levelMask, long[] stamps, long[] positions, int volume, long address,
                           long lo, long hi) {
        boolean recordedAt(int level) {
            return (levelMask & (1 << (level - 1))) != 0;
        }
    }

    /**
     * Opens (or creates) the archive in the settings' directory; nothing is captured until {@link #recover}. Lazily
     * ranked snapshots are copied into their level once the settings' page window of newer snapshots exist.
     */
    public SnapshotArchive(FileIOFactory io, ArchiveSettings settings) {
        Path dir = settings.dir();
        int pageSize = settings.pageSize();
        int skippyLevels = settings.skippyLevels();
        int skippyNodeEntries = settings.skippyNodeEntries();
        long segmentBytes = settings.segmentBytes();
        RankTreePolicy retention = settings.retention();
        this.io = io;
        this.dir = dir;
        this.pageSize = pageSize;
        this.pageWindow = settings.pageWindow();
        this.budget = retention.budgetBytes().orElse(-1);
        try {
            io.createDirectories(dir);
        } catch (IOException e) {
            throw new StorageException("cannot create the archive directory", dir, e);
        }
        int k = retention.levelCount();
        if (io.exists(ArchiveLevel.dirOf(dir, k + 1)))
            throw new IllegalArgumentException("the archive in " + dir + " has more rank levels than the retention policy's " + k
                    + "; the number of levels of an existing archive cannot shrink");
        // a new archive has no marks file: it is created last, so an archive without one holds no records
        boolean fresh = !io.exists(dir.resolve(ArchiveMarks.FILE));
        if (fresh) refuseRecordsWithoutMarks();
        this.levels = new ArchiveLevel[k];
        List<AutoCloseable> opened = new ArrayList<>();
        try {
            ArchiveMarks found = fresh ? null : Closing.track(opened, new ArchiveMarks(io, dir, skippyNodeEntries, MaplogFile.Missing.CORRUPT));
            MaplogFile.Missing missing = fresh ? MaplogFile.Missing.CREATE : MaplogFile.Missing.CORRUPT;
            MaplogFile.Missing later = fresh || found.olderFormat() ? MaplogFile.Missing.CREATE : missing; // joins and moves came after the first archives
            for (int j = 1; j <= k; j++)
                levels[j - 1] = Closing.track(opened, new ArchiveLevel(io, dir, j, pageSize, skippyLevels, skippyNodeEntries, segmentBytes, missing));
            this.registry = Closing.track(opened, new SnapshotRegistry(io, dir, retention, skippyNodeEntries, missing, later));
            this.moves = Closing.track(opened, new MoveLog(io, dir, skippyNodeEntries, later));
            this.marks = fresh ? new ArchiveMarks(io, dir, skippyNodeEntries, MaplogFile.Missing.CREATE) : found;
        } catch (RuntimeException e) {
            Closing.closeAll(e, opened);
            throw e;
        }
        this.slots = new PageSlots(settings.captureBufferBytes(), pageSize);
        this.capture = new Capture(this);
        this.archiver = new Archiver(this);
    }

    /**
     * An archive without its marks file must be new, or a creation cut short — no file holds more than its header;
     * otherwise the marks were lost, and with them what recovery needs to tell a torn tail from lost records.
     */
    private void refuseRecordsWithoutMarks() {
        List<Path> files = new ArrayList<>();
        try {
            for (Path p : io.list(dir, "")) if (!p.getFileName().toString().startsWith("level-")) files.add(p);
            for (int j = 1; io.exists(ArchiveLevel.dirOf(dir, j)); j++) files.addAll(io.list(ArchiveLevel.dirOf(dir, j), ""));
            for (Path p : files) {
                if (DurableFiles.isTemp(p)) continue;
                try (var f = io.open(p, false)) {
                    if (f.size() > HEADER_BYTES)
                        throw new CorruptionException("the archive's checkpoint marks are missing, but " + p + " holds records", dir.resolve(ArchiveMarks.FILE), 0);
                }
            }
        } catch (IOException e) {
            throw new StorageException("cannot list the archive: " + e.getMessage(), dir, e);
        }
    }

    /** Steps the archiver with {@code agents} (by hand when {@link Agents#invoked}); call before {@link #recover}. */
    public void useAgents(Agents agents) {
        archiver.agents(agents);
    }

    /** Registers the capture hook with page memory (after any physical-WAL hook, so its deltas see SavedAfter change). */
    public void attach(PageMemory memory) {
        memory.addWriteHook(capture);
    }

    // ---------------------------------------------------------------- recovery

    /**
     * Retro stage 1, once the engine has decided its WAL and markers are sound: checks that every archive file holds
     * what the recovered checkpoint mark ({@code markLsn}; {@code emptyStore} when no checkpoint ever completed) made
     * durable — reading only, so a damaged archive is refused with a {@link CorruptionException} naming the file and
     * nothing changed — then cuts every log back to the mark (and any torn tail past it), deletes what a crash left
     * half-made, and turns capture on for logical replay.
     */
    public void recover(long markLsn, boolean emptyStore) {
        ArchiveMarks.Mark mark = emptyStore ? ArchiveMarks.Mark.none(levels.length) : marks.find(markLsn, levels.length);
        for (ArchiveLevel l : levels) l.checkDurable(mark.mappings()[l.level - 1], mark.addresses()[l.level - 1]);
        lock.lock();
        try {
            registry.prepare(markLsn, emptyStore, mark);
            Map<Long, RankedExtent> kept = recoveredExtents(moves.prepare(markLsn, emptyStore, mark.moves()));
            // sound: from here on the cuts
            for (ArchiveLevel l : levels) l.cutTo(mark.mappings()[l.level - 1], mark.addresses()[l.level - 1]);
            registry.cut();
            moves.cut();
            marks.cut(emptyStore);
            extents.clear();
            extents.putAll(kept);
            retired.clear();
            deleteLeftovers();
            capturesPerSnapshot.clear();
            nextCapture = 0;
            archived = 0;
            markCapture = 0;
            countCaptures(levels[0].nextMapping);
        } finally {
            lock.unlock();
        }
        capture.enabled(true);
        archiver.start(); // replay captures too, and its checkpoints wait for the archive
    }

    /**
     * Applies the lazy-ranking copies made at marks up to the recovered one to the snapshots still live, and returns
     * the ranked extent each of them reads — checked whole, so a missing, cut or damaged extent is found now, not
     * when a read falls back on pre-states of other versions. Caller holds the lock; reads only.
     */
    private Map<Long, RankedExtent> recoveredExtents(List<MoveLog.Move> moved) {
        Map<Long, MoveLog.Move> latest = new HashMap<>();
        for (MoveLog.Move m : moved) if (registry.find(m.id()) != null) latest.put(m.id(), m);
        Map<Long, RankedExtent> out = new HashMap<>();
        for (MoveLog.Move m : latest.values()) {
            registry.moved(m.id(), m.level(), m.start());
            Path path = RankedExtent.pathOf(ArchiveLevel.dirOf(dir, m.level()), m.id());
            if (Boolean.FALSE.equals(m.extent()) || (m.extent() == null && !io.exists(path))) continue; // the copy found nothing to copy
            if (!io.exists(path))
                throw new CorruptionException("snapshot " + m.id() + " is read through its ranked extent, which is missing (copied at checkpoint mark "
                        + m.mark() + ")", path, 0);
            RankedExtent e = RankedExtent.open(io, path, pageSize);
            e.verify(io, m.id(), m.level());
            out.put(m.id(), e);
        }
        return out;
    }

    /** Deletes what a crash left half-made (temp files) and the extents no live snapshot reads. Recovery, once sound. */
    private void deleteLeftovers() {
        List<Path> files = new ArrayList<>();
        try {
            files.addAll(io.list(dir, ""));
            for (ArchiveLevel l : levels) files.addAll(io.list(l.dir, ""));
            for (Path p : files) {
                long snapshot = RankedExtent.snapshotOf(p);
                RankedExtent e = snapshot < 0 ? null : extents.get(snapshot);
                if (DurableFiles.isTemp(p) || (snapshot >= 0 && (e == null || !e.path().equals(p)))) io.delete(p);
            }
        } catch (IOException e) {
            throw new StorageException("cannot delete what a crash left in the archive: " + e.getMessage(), dir, e);
        }
    }

    private void countCaptures(long n) {
        int chunk = 4096;
        long[] snaps = new long[chunk];
        for (long at = levels[0].maplog.maplog().first(); at < n; at += chunk) { // reclaimed portions count no more
            int k = (int) Math.min(chunk, n - at);
            levels[0].maplog.maplog().read(at, k, null, snaps, null); // every capture is recorded at level 1
            for (int i = 0; i < k; i++) capturesPerSnapshot.computeIfAbsent(snaps[i], s -> new long[1])[0]++;
        }
    }

    // ---------------------------------------------------------------- declarations

    /**
     * Latest snapshot id handed out, 0 when none: declared, or known to the recovered checkpoint mark (ids are never
     * handed out twice, even when replay does not re-declare every one of them).
     */
    public long latest() {
        return registry.latest();
    }

    /** Latest snapshot declared (replayed, or since recovery): the one a page's pre-state is captured for. */
    long latestDeclared() {
        return registry.declaredLatest();
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
        lock.lock();
        try {
            registry.declare(id, rank, declaredMillis, walLsn, level -> levels[level - 1].nextMapping);
            enforceBudget();
            capturesPerSnapshot.headMap(registry.oldestLive()).clear();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Lazy ranking: raises live snapshot {@code id} to {@code rank}, logged at {@code walLsn}. Replay calls it
     * again for each rank record after the recovered mark; a snapshot the policy has dropped since stays dropped.
     *
     * @return false when the snapshot is not live
     */
    public boolean rank(long id, int rank, long walLsn) {
        lock.lock();
        try {
            long[] positions = new long[levels.length];
            for (ArchiveLevel l : levels) positions[l.level - 1] = l.nextMapping;
            return registry.rank(id, rank, walLsn, positions);
        } finally {
            lock.unlock();
        }
    }

    /** Applies the retention policy now (keepFor rules age); the archiver calls it periodically. */
    public void enforce() {
        lock.lock();
        try {
            registry.enforce(System.currentTimeMillis());
            enforceBudget();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Over the budget, drops snapshots (lowest rank, oldest first) until the bytes attributed to them cover the
     * excess, counting what earlier budget drops will give back at the next reclamation. Caller holds the lock.
     */
    private void enforceBudget() {
        if (budget < 0) return;
        long excess = bytes() - budget - budgetPending;
        if (excess > 0) budgetPending += registry.dropForBudget(excess, budget, this::attributedBytes);
    }

    /** Why {@code id} is no longer live, or null if it is live or was never declared. */
    public DroppedSnapshot dropped(long id) {
        lock.lock();
        try {
            return registry.dropped(id);
        } finally {
            lock.unlock();
        }
    }

    /** The declaration of live snapshot {@code id}, or null (never declared, or dropped by the policy). */
    public SnapshotRecord find(long id) {
        lock.lock();
        try {
            return registry.find(id);
        } finally {
            lock.unlock();
        }
    }

    /** Every live snapshot, oldest first. */
    public List<SnapshotRecord> snapshots() {
        lock.lock();
        try {
            return registry.live();
        } finally {
            lock.unlock();
        }
    }

    /** Archive bytes held for snapshot {@code id}: its captured pre-states and their mappings. */
    public long archiveBytes(long id) {
        lock.lock();
        try {
            return attributedBytes(id);
        } finally {
            lock.unlock();
        }
    }

    /** The pre-states first captured for snapshot {@code id} with their level-1 mappings, and its ranked extent. Caller holds the lock. */
    private long attributedBytes(long id) {
        long[] c = capturesPerSnapshot.get(id);
        RankedExtent e = extents.get(id);
        return (c == null ? 0 : c[0] * (pageSize + Pagelog.RECORD_HEADER + MaplogFile.ENTRY)) + (e == null ? 0 : e.bytes());
    }

    /** Time writers waited for room in the capture buffer (the archiver's back-pressure), since open. */
    public long captureWaitNanos() {
        return captureWaitNanos.sum();
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
            for (RankedExtent e : extents.values()) out[e.level() - 1] += e.bytes();
            for (RankedExtent e : retired) out[e.level() - 1] += e.bytes();
        } finally {
            lock.unlock();
        }
        return out;
    }

    /** Bytes lazy ranking wrote into ranked extents since open. */
    public long copiedByRankingBytes() {
        return copiedBytes.sum();
    }

    /** Diff compactness R of the pages lazy ranking copied since open: diff bytes over full-page bytes; NaN before any. */
    public double diffCompactness() {
        long pages = copiedPages.sum();
        return pages == 0 ? Double.NaN : copiedDiffBytes.sum() / ((double) pages * pageSize);
    }

    // ---------------------------------------------------------------- capture and archiving

    /**
     * Copies the pre-state of {@code page}, whose SavedAfter was {@code savedAfter}, for the latest snapshot
     * {@code snapshot}; decides which levels record it and where it is stored. Waits while the capture buffer is full.
     */
    void capture(Frame page, long snapshot, long savedAfter) {
        long start = 0;
        int slot;
        while ((slot = slots.copyOf(page)) < 0) {
            checkUsable();
            archiver.awaitProgress();
            if (start == 0) start = System.nanoTime();
            if (System.nanoTime() - start > WAIT_LIMIT_NANOS) throw new StorageException("capture buffer full for "
                    + TimeUnit.NANOSECONDS.toSeconds(WAIT_LIMIT_NANOS) + " s: the archiver is not keeping up", null);
            LockSupport.parkNanos(20_000);
        }
        if (start != 0) captureWaitNanos.add(System.nanoTime() - start);
        long pageId = page.heldPageId();
        lock.lock();
        try {
            int k = levels.length;
            long[] stamps = new long[k];
            long[] positions = new long[k];
            int mask = 0;
            int top = 1;
            long lo = 0;
            for (int j = 1; j <= k; j++) {
                long latestAtJ = registry.latestAt(j);
                if (latestAtJ == 0) break;
                long savedAfterAtJ = registry.savedAfterAt(j, savedAfter);
                if (latestAtJ <= savedAfterAtJ) continue; // this level has its pre-state already
                mask |= 1 << (j - 1);
                stamps[j - 1] = latestAtJ;
                positions[j - 1] = levels[j - 1].nextMapping++;
                top = j;
                lo = savedAfterAtJ;
            }
            long address = levels[top - 1].nextAddress++; // highest recorder captures
            Pending p = new Pending(nextCapture++, pageId, slot, mask, stamps, positions, top, address, lo, snapshot);
            pending.addLast(p);
            long location = SnapshotPageTable.pendingLocation(slot);
            for (SnapshotPageTable v : views) if (!v.building() && p.recordedAt(v.level())) v.onCapture(pageId, stamps[v.level() - 1], location);
        } finally {
            lock.unlock();
        }
        archiver.wake();
    }

    /**
     * Archives the oldest pending captures, up to a batch: their pages go to the Pagelog in one write, then their
     * mappings to the Maplog, in capture order. False when none was pending. Archiver thread only.
     */
    boolean archiveNext() {
        List<Pending> batch = new ArrayList<>(ARCHIVE_BATCH);
        lock.lock();
        try {
            for (Pending p : pending) {
                if (batch.size() == ARCHIVE_BATCH) break;
                batch.add(p);
            }
        } finally {
            lock.unlock();
        }
        if (batch.isEmpty()) return false;
        boolean[] touched = new boolean[levels.length];
        for (Pending p : batch) {
            long address = levels[p.volume() - 1].volume.append(p.pageId(), p.lo(), p.hi(), slots.memory(), slots.offsetOf(p.slot()));
            if (address != p.address()) throw new IllegalStateException("level " + p.volume() + " volume address " + address + " differs from " + p.address());
            touched[p.volume() - 1] = true;
        }
        for (int j = 0; j < levels.length; j++) if (touched[j]) levels[j].volume.writeStaged();
        lock.lock();
        try {
            for (Pending p : batch) {
                long location = ArchiveLevel.location(p.volume(), p.address());
                for (ArchiveLevel l : levels) {
                    if (!p.recordedAt(l.level)) continue;
                    if (l.maplog.size() != p.positions()[l.level - 1])
                        throw new IllegalStateException("level " + l.level + " Maplog at " + l.maplog.size() + ", mapping due at " + p.positions()[l.level - 1]);
                    l.maplog.append(p.pageId(), p.stamps()[l.level - 1], location);
                }
                long pendingLocation = SnapshotPageTable.pendingLocation(p.slot());
                for (SnapshotPageTable v : views) if (!v.building()) v.onArchived(p.pageId(), pendingLocation, location);
                pending.removeFirst();
                slots.free(p.slot());
                capturesPerSnapshot.computeIfAbsent(p.hi(), x -> new long[1])[0]++;
                archived = p.number() + 1;
            }
        } finally {
            lock.unlock();
        }
        return true;
    }

    void failed(Throwable t) {
        failure = t;
    }

    private void checkUsable() {
        Throwable f = failure;
        if (f != null) throw new StorageException("the snapshot archiver failed earlier (" + f + ")", null, f);
    }

    // ---------------------------------------------------------------- checkpoint protocol

    @Override
    public void onMark(long checkpointId, long markLsn) {
        lock.lock();
        try {
            dueAtMark = registry.dueForMove(pageWindow); // taken now: a raise between the mark and the copy waits for the next
            markCapture = nextCapture;
            logsAtMark = registry.counts();
            latestAtMark = registry.declaredLatest();
            for (ArchiveLevel l : levels) {
                l.mappingsAtMark = l.nextMapping;
                l.addressesAtMark = l.nextAddress;
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void beforeStartMarker(long checkpointId, long markLsn) {
        flush(markLsn);
    }

    /**
     * After a checkpoint: reclaims the Pagelog segments no live snapshot and no open view can reach — wholly below
     * Start of the oldest of them — and no recovery can need — below this checkpoint's mark. Whole files go;
     * nothing is copied. Drop decisions are made durable first, so a crash cannot bring back a snapshot whose data
     * is gone.
     */
    @Override
    public void afterEndMarker(long checkpointId, long markLsn) {
        List<TreeSet<Long>> reachingUpTo = new ArrayList<>();
        long[] limits = new long[levels.length];
        long[] scannedFrom = new long[levels.length];
        List<RankedExtent> unused = new ArrayList<>();
        long pendingBefore;
        lock.lock();
        try {
            pendingBefore = budgetPending;
            registry.forceDrops();
            for (var it = extents.values().iterator(); it.hasNext(); ) {
                RankedExtent e = it.next();
                if (registry.find(e.snapshot()) == null) {
                    retired.add(e);
                    it.remove();
                }
            }
            for (var it = retired.iterator(); it.hasNext(); ) {
                RankedExtent e = it.next();
                if (views.stream().noneMatch(v -> v.extent() != null && v.extent().extent() == e)) {
                    unused.add(e);
                    it.remove();
                }
            }
            for (ArchiveLevel l : levels) {
                limits[l.level - 1] = Math.min(l.addressesAtMark, minPin(l.level)); // a ranked extent's bases stay
                scannedFrom[l.level - 1] = Math.min(l.mappingsAtMark, registry.firstScanned(l.level));
                for (SnapshotPageTable v : views) if (v.level() == l.level) scannedFrom[l.level - 1] = Math.min(scannedFrom[l.level - 1], v.start());
                TreeSet<Long> ids = registry.readingUpTo(l.level); // and the snapshots open views read through level <= l
                for (SnapshotPageTable v : views) if (v.level() <= l.level) ids.add(v.snapshot());
                reachingUpTo.add(ids);
            }
        } finally {
            lock.unlock();
        }
        for (RankedExtent e : unused) e.delete(io); // whole files, like segments
        for (ArchiveLevel l : levels) {
            TreeSet<Long> ids = reachingUpTo.get(l.level - 1);
            l.volume.reclaimOldest(limits[l.level - 1], (lo, hi) -> noneIn(ids, lo, hi));
            l.maplog.reclaimBefore(scannedFrom[l.level - 1]); // and the Maplog portions no scan starts in any more
        }
        lock.lock();
        try {
            budgetPending -= pendingBefore; // given back now, as far as whole segments allow; later drops still count
        } finally {
            lock.unlock();
        }
    }

    /** The lowest address of volume {@code level} a ranked extent still on disk uses as a base. Caller holds the lock. */
    private long minPin(int level) {
        long min = Long.MAX_VALUE;
        for (RankedExtent e : extents.values()) min = Math.min(min, e.pin(level));
        for (RankedExtent e : retired) min = Math.min(min, e.pin(level));
        return min;
    }

    /** True when no id of {@code ids} lies in (lo, hi]. */
    private static boolean noneIn(TreeSet<Long> ids, long lo, long hi) {
        Long first = ids.higher(lo);
        return first == null || first > hi;
    }

    /**
     * Fragmentation: bytes of pre-states no live snapshot, open view or ranked extent needs that lie behind one still
     * needed, in any level's volume — what reclamation by whole segments in temporal order cannot give back (reads
     * every record header; for metrics and tests). Eager ranking keeps it at 0: within a level pre-states expire in
     * the order they were archived.
     */
    public long deadBytesInLiveSegments() {
        long dead = 0;
        List<TreeSet<Long>> bases = new ArrayList<>();
        for (int j = 0; j < levels.length; j++) bases.add(new TreeSet<>());
        lock.lock(); // so that no extent is deleted under the scan
        try {
            for (RankedExtent e : extentsOnDisk()) {
                try (RankedExtent.Reader r = e.reader(io)) {
                    r.forEachRecord((pageId, offset, base) -> {
                        if (base >= 0) bases.get(ArchiveLevel.levelOf(base) - 1).add(ArchiveLevel.addressOf(base));
                    });
                }
            }
        } finally {
            lock.unlock();
        }
        for (ArchiveLevel l : levels) {
            TreeSet<Long> ids;
            lock.lock();
            try {
                ids = registry.readingUpTo(l.level);
                for (SnapshotPageTable v : views) if (v.level() <= l.level) ids.add(v.snapshot());
            } finally {
                lock.unlock();
            }
            TreeSet<Long> based = bases.get(l.level - 1);
            dead += l.volume.deadBytes((lo, hi) -> noneIn(ids, lo, hi), based::contains);
        }
        return dead;
    }

    private List<RankedExtent> extentsOnDisk() {
        lock.lock();
        try {
            List<RankedExtent> all = new ArrayList<>(extents.values());
            all.addAll(retired);
            return all;
        } finally {
            lock.unlock();
        }
    }

    /** Archive bytes given back by reclamation since open. */
    public long reclaimedBytes() {
        long b = 0;
        for (ArchiveLevel l : levels) b += l.volume.reclaimedBytes() + l.maplog.reclaimedBytes();
        return b;
    }

    /**
     * Makes every capture up to the mark durable — Pagelog, then Maplog and Skippy, then Start records — and
     * records the mark's capture number (I4, I5).
     */
    void flush(long markLsn) {
        long target;
        long[][] atMark = new long[2][levels.length];
        long[] logs;
        long latestDeclared;
        lock.lock();
        try {
            target = markCapture;
            logs = logsAtMark;
            latestDeclared = latestAtMark;
            for (ArchiveLevel l : levels) {
                atMark[0][l.level - 1] = l.mappingsAtMark;
                atMark[1][l.level - 1] = l.addressesAtMark;
            }
        } finally {
            lock.unlock();
        }
        long start = System.nanoTime();
        while (archived < target) {
            checkUsable();
            archiver.awaitProgress();
            if (System.nanoTime() - start > WAIT_LIMIT_NANOS) throw new StorageException("the archiver did not catch up with the checkpoint mark", null);
            LockSupport.parkNanos(20_000);
        }
        List<SnapshotRegistry.Move> due;
        lock.lock();
        try {
            due = dueAtMark;
            dueAtMark = List.of();
        } finally {
            lock.unlock();
        }
        for (SnapshotRegistry.Move m : due) copyToLevel(m, markLsn);
        lock.lock();
        try {
            for (ArchiveLevel l : levels) l.volume.force();
            for (ArchiveLevel l : levels) l.maplog.force();
            registry.force();
            moves.force();
            marks.append(new ArchiveMarks.Mark(markLsn, atMark[0], atMark[1], logs[0], logs[1], logs[2], moves.count(), latestDeclared, registry.latest()));
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- lazy ranking

    /**
     * Thresher's lazy segregation of a snapshot raised after its declaration and now out of the page window. Pages
     * first changed after the raise (the join) are recorded at the new level already; the ones first changed between
     * the declaration and the join — its SPT at the level it is read through, up to that level's join position — are
     * copied into a ranked extent at the target level, as byte-range diffs against pre-states that level holds (of the
     * latest live snapshot there before it; whole pages where it has none). The move is logged with the mark; reads
     * switch to the extent, then the target level's Maplog from the join, and the lower levels stop keeping the
     * snapshot's pre-states. A snapshot raised right after its declaration copies (next to) nothing.
     */
    private void copyToLevel(SnapshotRegistry.Move move, long markLsn) {
        long id = move.id();
        int target = move.target();
        long targetStart = move.positions()[target - 1];
        int from;
        long fromStart;
        long baseStart;
        RankedExtent previous;
        lock.lock();
        try {
            SnapshotRecord r = registry.find(id);
            if (r == null) return; // dropped since the mark
            from = registry.readLevel(id);
            fromStart = registry.readStart(r);
            baseStart = registry.baseStart(id, target);
            previous = extents.get(id);
        } finally {
            lock.unlock();
        }
        LongLongMap source = new LongLongMap(1024);
        LongLongMap bases = new LongLongMap(1024);
        if (baseStart >= 0 && baseStart < targetStart) levels[target - 1].maplog.buildSpt(baseStart, bases, targetStart);
        ByteBuffer image = ByteBuffer.allocateDirect(pageSize);
        ByteBuffer baseImage = ByteBuffer.allocateDirect(pageSize);
        RankedExtent extent = null;
        RankedExtent.Writer w = null;
        try (RankedExtent.Reader earlier = previous == null ? null : previous.reader(io)) {
            if (earlier != null) earlier.index(source); // a copy-out after the window: its earlier copy comes first
            levels[from - 1].maplog.buildSpt(fromStart, source, Math.max(fromStart, move.positions()[from - 1]));
            if (source.size() > 0) {
                RankedExtent.Writer writer = new RankedExtent.Writer(io, levels[target - 1].dir, id, target, levels.length, pageSize);
                w = writer;
                source.forEach((pageId, location) -> {
                    readLocation(location, pageId, image, earlier);
                    long base = bases.get(pageId, SnapshotPageTable.MISSING);
                    if (base >= 0 && levels[ArchiveLevel.levelOf(base) - 1].volume.holds(ArchiveLevel.addressOf(base))) {
                        readLocation(base, pageId, baseImage, null);
                        writer.add(pageId, image, baseImage, base, ArchiveLevel.levelOf(base));
                    } else {
                        writer.add(pageId, image, null, -1, 0);
                    }
                });
                extent = writer.finish();
            }
        } catch (RuntimeException e) {
            if (w != null) w.abandon();
            throw e;
        }
        moves.append(markLsn, id, target, targetStart, extent != null);
        lock.lock();
        try {
            registry.moved(id, target, targetStart);
            if (extent != null) extents.put(id, extent);
            else extents.remove(id);
            if (previous != null) retired.add(previous);
        } finally {
            lock.unlock();
        }
        if (extent == null) {
            LOG.info("lazy ranking moved snapshot {} from level {} to level {} without copying: no page changed before its raise", id, from, target);
            return;
        }
        copiedBytes.add(extent.bytes());
        copiedDiffBytes.add(w.diffBytes());
        copiedPages.add(w.records());
        LOG.info("lazy ranking copied snapshot {} from level {} to level {}: {} pages ({} whole) in {} bytes, R {}", id, from, target,
                w.records(), w.wholePages(), extent.bytes(), String.format("%.3f", w.diffBytes() / ((double) w.records() * pageSize)));
    }

    /** Reads the image at an archive {@code location}: a volume record, or a record of {@code extent}. */
    private void readLocation(long location, long pageId, ByteBuffer dst, RankedExtent.Reader extent) {
        if (ArchiveLevel.isExtent(location)) extent.read(ArchiveLevel.extentOffset(location), pageId, dst, 0, this::readVolume);
        else readVolume(location, pageId, dst, 0);
    }

    private void readVolume(long location, long pageId, ByteBuffer dst, int dstOffset) {
        levels[ArchiveLevel.levelOf(location) - 1].volume.read(ArchiveLevel.addressOf(location), pageId, dst, dstOffset);
    }

    // ---------------------------------------------------------------- views

    /** Builds SPT(v) for snapshot {@code r} and keeps it current until {@link #closeView}; null when it was dropped meanwhile. */
    SnapshotPageTable openView(SnapshotRecord r) {
        SnapshotPageTable spt;
        lock.lock();
        try {
            if (registry.find(r.id()) == null) return null; // dropped since it was looked up: nothing pins it
            RankedExtent e = registry.movedTo(r.id()) == 0 ? null : extents.get(r.id());
            spt = new SnapshotPageTable(r.id(), registry.readLevel(r.id()), registry.readStart(r), e == null ? null : e.reader(io));
            views.add(spt); // pins what it will read from now on; fed captures only once built
        } finally {
            lock.unlock();
        }
        try {
            Skippy maplog = levels[spt.level() - 1].maplog;
            if (spt.extent() != null) spt.extent().index(spt.map()); // its pre-states up to the copy come first
            long built = maplog.size();
            maplog.buildSpt(spt.start(), spt.map(), built);
            lock.lock();
            try {
                maplog.catchUp(built, spt.map());
                for (Pending p : pending) {
                    if (p.recordedAt(spt.level()) && p.stamps()[spt.level() - 1] >= r.id()) spt.map().putIfAbsent(p.pageId(), SnapshotPageTable.pendingLocation(p.slot()));
                }
                spt.built();
            } finally {
                lock.unlock();
            }
            return spt;
        } catch (RuntimeException e) {
            closeView(spt);
            throw e;
        }
    }

    void closeView(SnapshotPageTable spt) {
        lock.lock();
        try {
            views.remove(spt);
        } finally {
            lock.unlock();
        }
        if (spt.extent() != null) spt.extent().close();
    }

    /** Copies the archived image of {@code pageId} as of the view's snapshot into {@code dst}; false when SPT lacks it. */
    boolean readArchived(SnapshotPageTable spt, long pageId, ByteBuffer dst, int offset) {
        long location;
        lock.lock();
        try {
            location = spt.map().get(pageId, SnapshotPageTable.MISSING);
            if (location == SnapshotPageTable.MISSING) return false;
            if (SnapshotPageTable.isPending(location)) {
                slots.copyOut(SnapshotPageTable.slotOf(location), dst, offset);
                return true;
            }
        } finally {
            lock.unlock();
        }
        if (ArchiveLevel.isExtent(location)) spt.extent().read(ArchiveLevel.extentOffset(location), pageId, dst, offset, this::readVolume);
        else readVolume(location, pageId, dst, offset);
        return true;
    }

    /**
     * The error for a page a view needs that changed after its snapshot but has no archived pre-state: the files it
     * was looked for in lost it (or are not the ones written).
     */
    StorageException noPreState(SnapshotPageTable spt, long pageId) {
        Path maplog = levels[spt.level() - 1].maplog.maplog().path();
        String extent = spt.extent() == null ? "" : " and ranked extent " + spt.extent().extent().path();
        return new StorageException("page " + PageId.toString(pageId) + " changed after snapshot " + spt.snapshot() + " but the archive holds no pre-state for it: "
                + "the level-" + spt.level() + " Maplog from position " + spt.start() + extent + " maps none", maplog);
    }

    /**
     * I8 check: builds SPT(v) of every live snapshot and open view and lists the mappings that point at reclaimed
     * data (empty when the invariant holds). For tests and tools; reads every Maplog from each Start.
     */
    public List<String> reachableButReclaimed() {
        List<SnapshotRecord> live;
        lock.lock();
        try {
            live = registry.live();
        } finally {
            lock.unlock();
        }
        List<String> out = new ArrayList<>();
        for (SnapshotRecord r : live) {
            int level;
            long start;
            RankedExtent extent;
            lock.lock();
            try {
                level = registry.readLevel(r.id());
                start = registry.readStart(r);
                extent = registry.movedTo(r.id()) == 0 ? null : extents.get(r.id());
            } finally {
                lock.unlock();
            }
            LongLongMap spt = new LongLongMap(1024);
            Skippy maplog = levels[level - 1].maplog;
            if (extent != null && !io.exists(extent.path())) {
                out.add("snapshot " + r.id() + " reads ranked extent " + extent.path() + ", which is gone");
            } else if (extent != null) {
                try (RankedExtent.Reader reader = extent.reader(io)) {
                    reader.forEachRecord((pageId, offset, base) -> checkHeld(r.id(), pageId, base, out));
                    reader.index(spt);
                }
            }
            maplog.buildSpt(start, spt, maplog.size());
            spt.forEach((pageId, location) -> checkHeld(r.id(), pageId, location, out));
        }
        return out;
    }

    private void checkHeld(long snapshot, long pageId, long location, List<String> out) {
        if (location < 0 || ArchiveLevel.isExtent(location)) return;
        if (!levels[ArchiveLevel.levelOf(location) - 1].volume.holds(ArchiveLevel.addressOf(location)))
            out.add("snapshot " + snapshot + " maps page " + pageId + " to reclaimed level-" + ArchiveLevel.levelOf(location)
                    + " address " + ArchiveLevel.addressOf(location));
    }

    /** Level {@code level}'s Maplog with its Skippy levels (tests). */
    Skippy maplog(int level) {
        return levels[level - 1].maplog;
    }

    /** Level {@code level}'s volume (tests that break the reclamation order on purpose). */
    Pagelog volume(int level) {
        return levels[level - 1].volume;
    }

    @Override
    public void close() {
        try {
            archiver.stop();
        } finally {
            List<AutoCloseable> parts = new ArrayList<>(List.of(levels));
            parts.addAll(List.of(registry, marks, moves));
            Closeables.closeAll(parts.toArray(new AutoCloseable[0]));
        }
    }
}
