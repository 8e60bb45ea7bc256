package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The retention policy's drops: the most recent in memory, every one in {@code drops.log} (a one-part log of the
 * Maplog format, {@link MaplogDescriptor.Kind#DROPS}) until {@link #compactBelow} lets go of those of snapshots below
 * the snapshot log's horizon. Guarded like the registry that owns it.
 */
final class DropLog implements AutoCloseable {
    /** Drops known in memory, and held in the log however old their snapshots, so that a restart still knows them. */
    private static final int RECENT_DROPS = 4096;
    /** Entries the log holds before a compaction is tried; after one it waits until the log doubles. */
    static final long COMPACT_MIN_ENTRIES = 2 * RECENT_DROPS;

    private final MaplogFile file;
    /** The most recent drops; older ones are looked up in the file ({@link DropLogLookup}). */
    private final Map<Long, DroppedSnapshot> recent = new LinkedHashMap<>(16, 0.75f, false) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, DroppedSnapshot> eldest) {
            return size() > RECENT_DROPS;
        }
    };
    /** What {@link #recover} kept, from the first entry held on: written back by {@link #cut}. */
    private final List<long[]> kept = new ArrayList<>();
    /** Whether {@link #recover} left out a drop with a kept one after it, so {@link #cut} must rewrite the log. */
    private boolean keptWithGaps;
    private final PrefixCompaction compaction = new PrefixCompaction(COMPACT_MIN_ENTRIES);
    /** The store's WAL, which the records that caused the drops are in. */
    private volatile WalDurability wal = WalDurability.NONE;
    /**
     * The latest WAL record that caused a drop buffered and not written yet (for a drop caused by every record appended
     * when it was made, the last byte of them): 0 when none did (the clock) or nothing is buffered.
     */
    private volatile long unwrittenCause;

    /** The drops of the store whose durable id {@code storeId} holds (0 until a marker does), see {@link MaplogFile}. */
    DropLog(FileIOFactory io, Path dir, int nodeEntries, MaplogFile.Missing missing, AtomicLong storeId) {
        file = new MaplogFile(io, dir.resolve("drops.log"), MaplogDescriptor.Kind.DROPS, MaplogDescriptor.NO_LEVEL, nodeEntries, MaplogFile.ONE_PART, missing,
                storeId);
        // no drop reaches the file before the record that caused it is durable: written (let alone forced) first, a crash
        // that lost the record would keep the drop (recovery keeps a drop after the mark of a snapshot declared before
        // it), and reclamation, which forces this log first, may already have deleted the snapshot's data
        file.gate(new MaplogBuffer.WriteGate() {
            @Override
            public boolean open() {
                long durable = wal.durableLsn();
                return unwrittenCause == 0 || unwrittenCause < durable || durable == Long.MAX_VALUE;
            }

            @Override
            public void await() {
                if (!open()) wal.forceThrough(unwrittenCause);
                unwrittenCause = 0; // what is buffered is written now
            }
        });
    }

    /** The WAL whose records cause drops (until set, none: a standalone archive). */
    void wal(WalDurability w) {
        wal = w;
    }

    Path path() {
        return file.path();
    }

    /** Position after the last drop: the count a checkpoint mark records. */
    long count() {
        return file.count();
    }

    /**
     * Recovery, reading only: checks that the log holds the first {@code durable} drops, made before the recovered
     * mark, and nothing damaged before a valid drop made after it (a reclamation may have relied on one).
     */
    void checkDurable(long durable) {
        file.checkDurable(durable);
        file.checkDurable(-1);
    }

    /**
     * Recovery, reading only: applies the drops to {@code live}. The first {@code durable} were made before the mark:
     * each must name a snapshot declared then and not dropped before — or one below {@code horizon}, all dropped and
     * forgotten. A later drop is kept only if it names a snapshot declared before the mark (replay re-decides the
     * rest, and a later id may be a different snapshot).
     */
    void recover(long durable, long horizon, Map<Long, SnapshotRecord> live) {
        long first = file.first();
        int n = (int) (file.count() - first);
        long[] ids = new long[n];
        long[] when = new long[n];
        long[] kind = new long[n];
        file.read(first, n, ids, when, kind);
        recent.clear();
        kept.clear();
        keptWithGaps = false;
        for (int i = 0; i < n; i++) {
            long position = first + i;
            SnapshotRecord r = live.remove(ids[i]);
            if (r == null && position < durable && ids[i] >= horizon)
                throw new CorruptionException("the drop log names snapshot " + ids[i] + ", which the snapshot log does not hold as live", file.pathOf(position),
                        MaplogDescriptor.entryOffset(i));
            if (r == null && position >= durable) continue;
            keptWithGaps |= kept.size() < i;
            kept.add(new long[]{ids[i], when[i], kind[i]}); // before the mark every drop stays: positions are what the mark counts
            recent.put(ids[i], DropLogLookup.dropped(ids[i], when[i], kind[i]));
        }
    }

    /**
     * Recovery, once the store is decided sound: cuts the log to what {@link #recover} kept — a truncate (of nothing,
     * after a clean close) when that is a prefix of it, else a rewrite, never a moment without it on disk, after a
     * truncate of any torn tail (so a check of the files, {@code varve verify}, sees the tail cut as it sees any other).
     */
    void cut() {
        if (keptWithGaps) {
            file.truncate(file.count()); // the part of an entry a crash left at the end goes first, as a cut, not in the rewrite
            file.replaceWith(file.first(), kept);
        } else {
            file.truncate(file.first() + kept.size());
        }
        kept.clear();
    }

    /**
     * Records that live snapshot {@code id} of {@code rank} was dropped now, by {@code cause}, for {@code why}, because
     * of the WAL record at {@code causeLsn} (0 when none: the clock; MAX_VALUE: every record appended so far).
     */
    void append(long id, int rank, long cause, String why, long causeLsn) {
        long when = System.currentTimeMillis();
        file.append(id, when, MaplogDescriptor.dropReason(cause, rank)); // may write what was buffered before: not waiting for this cause
        // "everything appended" means what is appended now: left open-ended, no force before the append gate would ever
        // cover it, and the drop log's force under the gate (which declarations wait for) would force the WAL again
        unwrittenCause = Math.max(unwrittenCause, causeLsn == Long.MAX_VALUE ? wal.position() - 1 : causeLsn);
        recent.put(id, new DroppedSnapshot(id, when, why));
    }

    /** The drop of {@code id} if it is among the recent ones, else null. */
    DroppedSnapshot recent(long id) {
        return recent.get(id);
    }

    /** The log, for a lookup of an old drop outside the registry's guard ({@link DropLogLookup}). */
    MaplogFile file() {
        return file;
    }

    /**
     * After a checkpoint, holding the append gate: rewrites the log without its entries before the first drop of a
     * snapshot at or above {@code horizon} (the snapshot log's, already durable) or of one the snapshot log
     * {@code retains} (open reads that one back as live, and only its drop says otherwise) — keeping the latest
     * {@value #RECENT_DROPS} drops, whatever they name — once it has grown enough since the last try that the rewrite's
     * cost is paid for by the log's own growth.
     */
    void compactBelow(long horizon, java.util.function.LongPredicate retains) {
        compaction.compact(file, file.count() - RECENT_DROPS, (id, whenMillis) -> id >= horizon || retains.test(id));
    }

    void force() {
        file.force();
    }

    /**
     * Holding none of the archive's locks: forces the WAL through the causes of the drops buffered so far, so that the
     * force of this log under the append gate, which declarations wait for, rarely has a WAL force to wait for too.
     */
    void forceCauses() {
        long cause = unwrittenCause;
        if (cause != 0 && cause >= wal.durableLsn()) wal.forceThrough(cause);
    }

    @Override
    public void close() {
        file.close();
    }
}
