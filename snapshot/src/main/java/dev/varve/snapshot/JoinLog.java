package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongPredicate;

/**
 * The rank changes ({@code joins.log}, a {@link MaplogDescriptor.Kind#JOINS} log): per raise of a live snapshot, one
 * entry per level (walLsn, snapshot, level and that level's Maplog position packed by
 * {@link ArchiveEncoding#location}), and in memory each live raised snapshot's positions at its latest raise. Guarded
 * like {@link SnapshotRegistry}, whose part it is: appended under the state lock and the append gate, compacted under
 * the gate.
 */
final class JoinLog implements AutoCloseable {
    private final MaplogFile log;
    private final int levels;
    /**
     * Live snapshots whose rank was raised: every level's Maplog position at the latest raise (index j - 1). Pages
     * first changed after it are recorded at the new levels; the ones changed between the declaration and it are what
     * a copy has to bring over.
     */
    private final Map<Long, long[]> joins = new HashMap<>();
    private final PrefixCompaction compaction = new PrefixCompaction(SnapshotRegistry.COMPACT_MIN_RECORDS);
    /** What {@link #read} kept, cut to by {@link #cut}. */
    private long kept;

    /** {@code missing}: whether a missing log is created (a new archive, or one older than the join log) or corruption. */
    JoinLog(FileIOFactory io, Path dir, int levels, int nodeEntries, MaplogFile.Missing missing, AtomicLong storeId) {
        this.levels = levels;
        this.log = new MaplogFile(io, dir.resolve("joins.log"), MaplogDescriptor.Kind.JOINS, MaplogDescriptor.NO_LEVEL, nodeEntries, MaplogFile.ONE_PART,
                missing, storeId);
    }

    /** Entries appended, written or not (what a checkpoint mark records). */
    long count() {
        return log.count();
    }

    /** See {@link MaplogFile#checkDurable}. */
    void checkDurable(long durable) {
        log.checkDurable(durable);
    }

    /**
     * Recovery, reading only: keeps the positions of the rank changes before the recovered mark (replay redoes the
     * later ones) of the snapshots {@code live} accepts, checking that the log holds the {@code durable} entries the
     * mark recorded (-1: not known). The latest entry of each (snapshot, level) wins.
     */
    void read(long markLsn, boolean emptyStore, long durable, LongPredicate live) {
        joins.clear();
        long first = log.first(); // a compaction let the entries before it go: of snapshots dropped by then, or written again later
        long keep = log.prefix(lsn -> !emptyStore && lsn < markLsn);
        if (durable >= 0 && keep != durable)
            throw new CorruptionException("the join log holds " + keep + " rank changes before checkpoint mark " + markLsn + " but the mark recorded "
                    + durable, log.pathOf(first), MaplogDescriptor.entryOffset(Math.max(0, Math.min(keep, durable) - first)));
        kept = keep;
        int n = (int) (keep - first);
        long[] ids = new long[n];
        long[] joined = new long[n]; // level and its position, packed like an archive location
        log.read(first, n, null, ids, joined);
        for (int i = 0; i < n; i++) {
            int level = ArchiveEncoding.levelOf(joined[i]);
            if (live.test(ids[i]) && level >= 1 && level <= levels)
                joins.computeIfAbsent(ids[i], x -> new long[levels])[level - 1] = ArchiveEncoding.addressOf(joined[i]);
        }
    }

    /** Recovery, once the store is decided sound: cuts the entries {@link #read} did not keep. */
    void cut() {
        log.truncate(kept);
        log.force();
    }

    /** Every level's position at live snapshot {@code id}'s latest raise (not to be changed), or null when it was not raised. */
    long[] positions(long id) {
        return joins.get(id);
    }

    /** Live snapshot {@code id} was raised at WAL LSN {@code walLsn}, when every level's Maplog stood at {@code positions}. */
    void raised(long id, long walLsn, long[] positions) {
        joins.put(id, positions.clone());
        for (int j = 1; j <= levels; j++) log.append(walLsn, id, ArchiveEncoding.location(j, positions[j - 1]));
    }

    /** Snapshot {@code id} was dropped. */
    void dropped(long id) {
        joins.remove(id);
    }

    /** Whether {@link #compact} would try now (decided under the state lock, to plan what it keeps). */
    boolean due() {
        return compaction.due(log);
    }

    /**
     * After the end marker of the checkpoint of mark {@code markLsn}, holding the append gate, once the drops behind
     * {@code plan} are durable: lets go of the entries recovery from that mark no longer reads — of the snapshots the
     * plan does not keep (each dropped by a durable drop) and those a later entry of the same snapshot and level before
     * the mark supersedes — up to the first one still read ({@link PrefixCompaction#compactLatest}). Recovery reads the
     * entries with an LSN below the mark, and the rank changes made after it have higher LSNs: entries written again
     * carry {@code markLsn} itself, which counts after this mark and before the next.
     */
    void compact(CompactionPlan plan, long markLsn) {
        LatestEntries.Shape byLevel = new LatestEntries.Shape(lsn -> lsn < markLsn, ArchiveEncoding::levelOf); // a slot per level
        compaction.compactLatest(log, byLevel, markLsn, plan::keeps, plan.live() != null);
    }

    void force() {
        log.force();
    }

    @Override
    public void close() {
        log.close();
    }
}
