package dev.varve.engine;

import dev.varve.checkpoint.CheckpointMarker;
import dev.varve.checkpoint.Throttle;
import dev.varve.config.ConfigLimits;
import dev.varve.config.RecoveryMode;
import dev.varve.core.io.PartitionFullException;
import dev.varve.core.io.StorageException;
import dev.varve.core.spi.LoggedValue;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.tree.BPlusTree;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.function.IntFunction;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

/**
 * The engine's one write path: every change of the store's pages (puts, removes, batches, a partition's destroy, a
 * table's creation) takes data-region head-room and throttling, then the checkpoint lock, then the partitions' write
 * locks in file-id order, appends its WAL record and applies its page changes, and commits once the locks are
 * released. So the WAL order is the order pages changed in (I6), and replay runs the same apply code.
 *
 * <p>Design note. Kept apart from {@link Engine}, which wires the store together, serves its reads and runs its life
 * cycle, so the order a write takes its locks in (the package's global lock order) reads in one place. A change that
 * fails after its record was appended is this path's failure: page memory is then behind the WAL, and the engine
 * refuses writes and reads of the live state until it is reopened ({@link #failure}).
 */
final class WritePath {
    private final Engine engine;
    /** The engine's checkpoint lock: a write holds its read side, a write-and-snapshot its write side. */
    private final ReadWriteLock checkpointLock;
    private final Throttle throttle;
    /** WAL_PHYSICAL: the page log names a put's value in its logical record ({@link LoggedValue}); nobody else reads it. */
    private final boolean logsPages;
    /** A logged change that failed to apply (page memory is behind the WAL), or null. */
    private volatile Throwable failure;
    /**
     * The high-water mark of value sizes the store was given, in bytes: never falls, so it bounds every value the
     * store holds. Checkpoint markers record it; replay bounds the overflow chains an operation may free by it. A write
     * raises it before its checks are all done, so one refused later may have raised it: an over-estimate, which only
     * makes replay reserve more.
     */
    private final AtomicInteger largestValue = new AtomicInteger();

    WritePath(Engine engine, ReadWriteLock checkpointLock, Throttle throttle) {
        this.engine = engine;
        this.checkpointLock = checkpointLock;
        this.throttle = throttle;
        this.logsPages = engine.config.recoveryMode() == RecoveryMode.WAL_PHYSICAL;
    }

    /**
     * Starts the high-water mark of value sizes where {@code recovered}, the checkpoint recovery starts from, left it
     * (0 with none: every value is then in the WAL); a marker written before it was recorded bounds nothing below the
     * largest value there can be.
     */
    void resumeLargestValue(CheckpointMarker recovered) {
        int largest = recovered == null ? 0 : recovered.largestValue();
        valueGiven(largest == CheckpointMarker.LARGEST_VALUE_UNKNOWN ? BPlusTree.MAX_VALUE_BYTES : largest);
    }

    /** Raises the high-water mark of value sizes to {@code bytes}, before the value's record is logged (or replayed). */
    void valueGiven(int bytes) {
        if (bytes > largestValue.get()) largestValue.accumulateAndGet(bytes, Math::max);
    }

    /** The high-water mark of value sizes, in bytes. */
    int largestValue() {
        return largestValue.get();
    }

    /** The change that failed after its record was appended, or null. */
    Throwable failure() {
        return failure;
    }

    /** Pages a put of this size may dirty: its overflow chain plus a split path. */
    private int pagesFor(byte[] key, byte[] value) {
        return engine.memory.headroomFor(key.length + (value == null ? 0L : value.length), 1);
    }

    /**
     * Put ({@code value != null}) or remove of one key in one partition; true when the key was present. It reserves
     * the longest overflow chain it may free on top of its own pages, rather than reading its leaf for the chain's
     * length before it logs: that read cost a put about a tenth of its throughput (a small reservation in any region,
     * see {@link #worstFreed}); a remove reads the leaf anyway, to log nothing for an absent key.
     */
    boolean write(PartitionHandle h, byte[] key, byte[] value) {
        if (value != null) valueGiven(value.length);
        boolean present = logged(pagesFor(key, value) + worstFreed(1), value == null ? List.of() : List.of(new Puts(h, 1, value.length)),
                List.of(h), RecordTypes.DATA_BATCH,
                () -> LogicalRecords.encodeSingle(h.fileId, key, value),
                value != null ? () -> 0 : () -> h.tree.overflowPages(key) < 0 ? -1 : 0, // removing an absent key logs nothing
                () -> applyLoggedOp(h, key, value, LogicalRecords.FIRST_OP));
        engine.writes.increment();
        return present;
    }

    /**
     * An atomic batch: one WAL record, every touched partition locked in file-id order. It logs the creation of the
     * tables in {@code created} just before its own record ({@link #logCreations}).
     */
    void write(List<LogicalRecords.Op> ops, TableRegistry.NewTables created) {
        if (ops.isEmpty()) return;
        Batch b = batch(ops, 0, created);
        logged(b.pages(), b.puts(), b.locked(), RecordTypes.DATA_BATCH, () -> {
            logCreations(created);
            return LogicalRecords.encodeBatch(ops);
        }, b.freed(), b.change());
        engine.writes.add(ops.size());
    }

    /**
     * An atomic batch and, right after it, the declaration of a snapshot of rank {@code rank} that holds it, with
     * ONE commit for both records. The batch is applied holding the checkpoint write lock rather than the read lock,
     * so no write is in flight at the declaration (I9) and nothing comes between the two records; the snaprec is
     * appended after the batch's record, so the commit that makes it durable makes the batch durable too: under
     * {@code FSYNC} one group-commit force instead of two. An empty batch is a plain declaration.
     */
    long writeAndSnapshot(List<LogicalRecords.Op> ops, TableRegistry.NewTables created, int rank) {
        engine.snapshots.checkRank(rank);
        if (ops.isEmpty()) return engine.snapshots.snapshotNow(rank);
        Batch b = batch(ops, LogicalRecords.SNAPSHOT_RANK_BYTES, created);
        Snapshots.Declared d = underCut(checkpointLock.writeLock(), b.pages(), reserved -> {
            // the batch names its snapshot's rank: should a crash keep the batch and cut off the snaprec, recovery declares it
            logAndApply(reserved, b.pages(), b.puts(), b.locked(), RecordTypes.DATA_BATCH, () -> {
                logCreations(created);
                return LogicalRecords.encodeBatch(ops, rank);
            }, b.freed(), b.change());
            return engine.snapshots.declareLocked(rank, null); // not reached when the batch failed: no snapshot without its batch
        });
        engine.writes.add(ops.size());
        engine.wal.commit(d.lsn());
        return d.id();
    }

    /**
     * {@link Engine#applyOp} of the operation at {@code opOffset} of the batch record being applied, telling the
     * physical page log where the record holds its value ({@link LoggedValue}).
     */
    private boolean applyLoggedOp(PartitionHandle h, byte[] key, byte[] value, int opOffset) {
        if (logsPages && value != null) LoggedValue.value(LogicalRecords.valueOffset(opOffset, key), value.length);
        else if (logsPages) LoggedValue.value(0, 0); // a remove writes no value
        return Engine.applyOp(h, key, value);
    }

    /**
     * A checked batch: its partitions in file-id order (the locking order), its page head-room, its puts by partition
     * ({@link #checkRoom}), the pages it frees beyond its head-room (asked under the locks) and its change.
     */
    private record Batch(List<PartitionHandle> locked, int pages, List<Puts> puts, IntSupplier freed, Change change) {
    }

    /** A write's puts into one partition and their values' bytes: what they may add to its file ({@link #checkRoom}). */
    record Puts(PartitionHandle partition, int count, long valueBytes) {
    }

    /**
     * Checks {@code ops}, whose record holds {@code extraBytes} more than the operations, and works out its locks and
     * head-room, the creation of the tables in {@code created} included. Those tables' partitions exist only once the
     * batch logs their creation: nobody else can reach them before (the catalog lock keeps them unnamed), and being
     * new and empty they refuse nothing and free nothing, so they are neither locked nor checked.
     */
    private Batch batch(List<LogicalRecords.Op> ops, int extraBytes, TableRegistry.NewTables created) {
        List<PartitionHandle> locked = new ArrayList<>();
        Map<PartitionHandle, long[]> putsBy = new IdentityHashMap<>(); // count, value bytes
        List<LogicalRecords.Op> existing = created.entries.isEmpty() ? ops : new ArrayList<>(ops.size());
        long keyAndValueBytes = 0;
        for (LogicalRecords.Op op : ops) {
            keyAndValueBytes += op.key().length + (op.value() == null ? 0 : op.value().length);
            if (op.value() != null) valueGiven(op.value().length);
            if (created.holds(op.fileId())) continue;
            if (existing != ops) existing.add(op);
            PartitionHandle h = engine.tables.partitionOf(op.fileId());
            if (!locked.contains(h)) locked.add(h);
            if (op.value() != null) {
                long[] c = putsBy.computeIfAbsent(h, x -> new long[2]);
                c[0]++;
                c[1] += op.value().length;
            }
        }
        List<Puts> puts = new ArrayList<>(putsBy.size());
        putsBy.forEach((h, c) -> puts.add(new Puts(h, (int) c[0], c[1])));
        engine.limits.checkBatch(LogicalRecords.batchBytes(ops) + extraBytes, keyAndValueBytes, ops.size());
        locked.sort(Comparator.comparingInt(h -> h.fileId));
        int own = withCreations(engine.memory.headroomFor(keyAndValueBytes, ops.size()), created);
        long worst = own + (long) worstFreed(ops.size());
        boolean small = reservesWorst(own, ops.size());
        return new Batch(locked, small ? (int) worst : own, puts, small ? () -> 0 : freedBy(existing), () -> {
            int at = LogicalRecords.FIRST_OP;
            for (LogicalRecords.Op op : ops) {
                applyLoggedOp(engine.tables.partitionOf(op.fileId()), op.key(), op.value(), at);
                at += op.encodedBytes();
            }
            return true;
        });
    }

    /**
     * Whether a batch of {@code operations} needing {@code own} pages reserves the longest chain each operation may
     * free, as a single write does, and reads no leaf first: a small one does; a larger one, for which that would take
     * much of the region, reads the chains it frees.
     */
    private boolean reservesWorst(int own, int operations) {
        return own + (long) worstFreed(operations) <= engine.memory.maxHeadroom() / 8;
    }

    /**
     * A batch's {@code own} pages plus those of creating the tables in {@code created}, refused when the sum is more
     * than one change may dirty (each alone was checked against that).
     */
    private int withCreations(int own, TableRegistry.NewTables created) {
        long pages = own;
        for (Catalog.Entry e : created.entries) pages += ConfigLimits.tableCreationPages(e.partitions());
        if (pages > engine.memory.maxHeadroom()) throw new IllegalArgumentException("batch with the " + created.entries.size()
                + " table(s) it creates touches ~" + pages + " pages, more than half the data region (" + engine.memory.capacityPages()
                + " pages); create the tables first (store.table(name)), split the batch or raise dataRegionSize");
        return (int) pages;
    }

    /**
     * Logs and applies the creation of each table in {@code created}, right before the record of the batch that
     * creates them is built and logged: under the batch's locks, after every check and head-room reservation, so
     * nothing refuses the batch once a table exists (a refused batch creates none). The records are not one: a crash
     * that keeps the creations and cuts off the batch's record keeps the empty tables (as if {@code table(name)} had
     * been called), without the batch.
     */
    private void logCreations(TableRegistry.NewTables created) {
        for (Catalog.Entry e : created.entries) {
            append(RecordTypes.CREATE_TABLE, LogicalRecords.encodeCreateTable(e.id(), e.options(), e.name()),
                    () -> created.formatted.add(engine.tables.formatCreated(e)));
        }
    }

    /**
     * The most pages {@code operations} operations may free: each removes or replaces at most one value, whose
     * overflow chain is at most that of the longest value (about 260 pages at 4 KiB pages; 0.4% of the default data
     * region). Replay reserves the same bound ({@link LogicalReplayer#freedPagesBound}).
     */
    private int worstFreed(int operations) {
        return (int) Math.min(Integer.MAX_VALUE / 2, (long) operations * BPlusTree.maxOverflowPages(engine.memory.pageSize()));
    }

    /**
     * Pages a batch frees beyond its estimate: the overflow chains of the values its operations remove or replace,
     * read from their leaves under the partitions' write locks (a key a batch touches twice is counted twice, an
     * over-count). A chain the batch itself wrote is already dirty, counted in its value's bytes.
     */
    private IntSupplier freedBy(List<LogicalRecords.Op> ops) {
        return () -> {
            long freed = 0;
            for (LogicalRecords.Op op : ops) freed += Math.max(0, engine.tables.partitionOf(op.fileId()).tree.overflowPages(op.key()));
            return (int) Math.min(Integer.MAX_VALUE / 2, freed);
        };
    }

    /** Empties a partition (the erased range is reused lazily: freeing it dirties no page but the meta page). */
    void destroy(PartitionHandle h) {
        logged(64, List.of(), List.of(h), RecordTypes.DESTROY_PARTITION, () -> LogicalRecords.encodeDestroy(h.fileId), () -> 0, () -> {
            h.tree.clear();
            return true;
        });
    }

    /**
     * The one write path: data-region head-room and throttling, the checkpoint read lock, the partitions' write
     * locks (in file-id order), then — unless {@code freed} says there is nothing to do (-1) — the WAL record and
     * its page changes, and after the locks are released the commit as {@code walSyncMode} promises. {@code pages}
     * is the estimate from the write's own bytes; {@code freed}, asked under the locks, adds the pages of the overflow
     * chains it frees, and the write takes more head-room and starts again when the two exceed what it reserved.
     * {@code puts} are its puts by partition, whose files' page limits they are checked against ({@link #checkRoom}).
     */
    boolean logged(int pages, List<Puts> puts, List<PartitionHandle> locked, int type, Supplier<ByteBuffer> record, IntSupplier freed, Change change) {
        Logged l = underCut(checkpointLock.readLock(), pages, reserved -> logAndApply(reserved, pages, puts, locked, type, record, freed, change));
        if (l == Logged.NOTHING) return false;
        engine.wal.commit(l.lsn());
        return l.result();
    }

    /**
     * Runs {@code body} holding {@code cut}, one side of the checkpoint lock, with {@code pages} of head-room
     * reserved (and throttled) before the lock is taken: the checkpointer takes that lock, so a writer must not
     * wait for it while holding it. The body is given what is reserved; when it finds, before logging anything,
     * that it needs more ({@link MoreRoom}), the locks are released and it runs again with that much reserved.
     */
    private <T> T underCut(Lock cut, int pages, IntFunction<T> body) {
        engine.checkNotReadOnly();
        for (int reserve = pages; ; ) {
            int reserved = reserve;
            throttle.beforeWrite(reserved);
            try {
                cut.lock();
                try {
                    return body.apply(reserved);
                } finally {
                    cut.unlock();
                }
            } catch (MoreRoom m) {
                reserve = roomFor(m.pages);
            } finally {
                throttle.afterWrite(reserved);
            }
        }
    }

    /**
     * Refuses, before anything is logged, a write whose freed overflow chains and own pages exceed what one change
     * may dirty: no checkpoint can clean a page while it is applied (no-steal), so it would wait for a clean page
     * that never comes and leave the store refusing writes.
     */
    private int roomFor(long pages) {
        if (pages > engine.memory.maxHeadroom()) throw new IllegalArgumentException("write removes or replaces values whose overflow pages, "
                + "with its own, come to ~" + pages + " pages, more than half the data region (" + engine.memory.capacityPages()
                + " pages); remove or replace fewer large values per batch or raise dataRegionSize");
        return (int) pages;
    }

    /** Thrown before a write logs anything: it needs {@code pages} of head-room, more than it reserved. */
    private static final class MoreRoom extends RuntimeException {
        final long pages;

        MoreRoom(long pages) {
            super(null, null, false, false);
            this.pages = pages;
        }
    }

    /** What a logged change left: the LSN its commit must reach and what its apply returned. */
    private record Logged(long lsn, boolean result) {
        /** Nothing was worth logging: nothing to commit. */
        static final Logged NOTHING = new Logged(-1, false);
    }

    /**
     * Appends the record and applies its change under the partitions' write locks; the caller holds the cut and
     * {@code reserved} pages of head-room, of which the write's bytes need {@code estimate}.
     */
    private Logged logAndApply(int reserved, int estimate, List<Puts> puts, List<PartitionHandle> locked, int type, Supplier<ByteBuffer> record,
                               IntSupplier freed, Change change) {
        for (PartitionHandle h : locked) h.lockWrites();
        try {
            engine.checkWritable();
            // a partition whose page file failed (a read error) would fail the apply after the record is logged: the
            // write would poison the store and come back at the next open though it was reported failed
            for (PartitionHandle h : locked) engine.store.checkUsable(h.fileId);
            for (Puts p : puts) checkRoom(p);
            int freedPages = freed.getAsInt();
            if (freedPages < 0) return Logged.NOTHING;
            if ((long) estimate + freedPages > reserved) throw new MoreRoom((long) estimate + freedPages);
            return append(type, record.get(), change);
        } finally {
            for (int i = locked.size() - 1; i >= 0; i--) locked.get(i).unlockWrites();
        }
    }

    /** Appends a record, applies its change and tells the change feed; the caller holds the write's locks. */
    private Logged append(int type, ByteBuffer payload, Change change) {
        ByteBuffer published = engine.changes.active() ? payload.duplicate() : null; // read after the apply
        long lsn = engine.wal.append(type, payload);
        boolean result;
        if (logsPages) LoggedValue.record(lsn, payload); // payloads are built from index 0
        try {
            result = applyLogged(change);
        } finally {
            if (logsPages) LoggedValue.clear();
        }
        if (published != null) engine.changes.logged(type, published, lsn);
        return new Logged(lsn, result);
    }

    /**
     * Refuses, before anything is logged, a write whose puts may take more pages than their partition's file has left
     * below its limit ({@link BPlusTree#MAX_PAGES}): the tree would refuse a put only once the record is in the WAL,
     * which poisons the store, and replay would meet the same refusal at every open. The bound holds whatever the
     * keys ({@link BPlusTree#roomAfterPuts}), so near the limit a write is refused a little early rather than late.
     */
    private static void checkRoom(Puts p) {
        BPlusTree tree = p.partition().tree;
        if (tree.roomAfterPuts(p.count(), p.valueBytes()) >= 0) return;
        throw new PartitionFullException("partition " + p.partition().index + " of table " + p.partition().table + " is full: "
                + tree.pagesLeft() + " pages are left of the " + tree.maxPages() + " a partition file holds at most, too few for the write's "
                + p.count() + " put(s) of " + p.valueBytes() + " value bytes; nothing was written. Remove entries from it (their pages are"
                + " reused) or spread the table over more partitions");
    }

    interface Change {
        boolean apply();
    }

    /** Applies a change whose record is already in the WAL; a failure here poisons the engine. */
    private boolean applyLogged(Change c) {
        try {
            return c.apply();
        } catch (RuntimeException | Error e) {
            failure = e;
            engine.checkpointer.refuseFurther(e);
            throw new StorageException("a logged write could not be applied (" + e + "); the store refuses further writes — reopen it to recover", null, e);
        }
    }
}
