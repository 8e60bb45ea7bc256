package dev.varve.engine;

import dev.varve.checkpoint.CheckpointMarkers;
import dev.varve.checkpoint.PageFileGenerations;
import dev.varve.config.VarveConfig;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.StorageException;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageStore;
import dev.varve.core.tree.LeafSalvage;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.wal.Wal;
import dev.varve.core.wal.WalOpenScan;
import dev.varve.core.wal.WalReader;
import dev.varve.recovery.RecoveryStart;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * The WAL's records as a tool shows them (LSN, type, size, and for a batch its operations), read through a
 * {@link MemoryOverlayIO}: opening the WAL cuts a torn tail and would create a first segment, but only in memory.
 * The WAL is judged as the store's own open judges it: a segment of another store refused, validated from the LSN
 * recovery starts reading at ({@link RecoveryStart#walScanFrom}), each segment by the rule of the walSyncMode that wrote it, which its header
 * records (a bad last record is a torn tail under FSYNC, damage otherwise); a segment of an earlier release, which
 * does not record it, by the configured {@link VarveConfig#walSyncMode()}. Damage in records before that LSN, which no recovery reads, is
 * reported ({@link UnreadDamage}) instead of refused. Reads hold the store's shared lock (they fail while a writer has
 * the store open).
 */
public final class WalInspector {
    /**
     * One operation of a batch: table id and name (as the catalog on disk and the WAL's table creations name it; null
     * when neither does), partition, key, and the value's size (-1 for a remove).
     */
    public record Op(int tableId, String table, int partition, byte[] key, int valueBytes) {
    }

    /** One record: its LSN, type name, payload bytes, the operations of a batch (else empty) and a short detail. */
    public record Record(long lsn, String type, int bytes, List<Op> ops, String detail) {
    }

    /**
     * Damage found in the WAL before {@code recoveryFrom}, the LSN recovery starts reading at: the record at
     * {@code lsn} ({@code file} at {@code offset}) fails its checks ({@code what}). No recovery reads it, so the store
     * opens. Reading goes on at {@code resumeLsn}, the next record that checks out (or the next segment).
     */
    public record UnreadDamage(long lsn, Path file, long offset, String what, long recoveryFrom, long resumeLsn) {
        @Override
        public String toString() {
            return file + " at offset " + offset + ": " + what + " (before LSN " + recoveryFrom + ", where recovery starts reading: no recovery reads it)";
        }
    }

    /**
     * First LSN held, end (next LSN), the torn tail cut at open (null when none), the LSN recovery reads from, and
     * damage before that LSN (empty when none).
     */
    public record Range(long firstLsn, long endLsn, String tailCut, long recoveryFrom, List<UnreadDamage> unreadDamage) {
    }

    private WalInspector() {
    }

    /**
     * The LSN range the WAL of {@code config}'s store holds, and damage in the part recovery does not read.
     *
     * @throws IllegalArgumentException if the directory holds no store
     */
    public static Range range(VarveConfig config) {
        if (config == null) throw new IllegalArgumentException("config must not be null");
        StoreInspector.requireStore(config.path(), ""); // else a mistyped path reads as an empty WAL
        return StoreLock.whileShared(config.path(), () -> {
            try (Opened o = open(config)) {
                List<UnreadDamage> damage = new ArrayList<>();
                o.unreadPart(o.wal.firstLsn(), r -> true, damage::add); // the open validated the rest
                return new Range(o.wal.firstLsn(), o.wal.position(), o.wal.tailCut().map(Object::toString).orElse(null), o.recoveryFrom, damage);
            }
        });
    }

    /**
     * Hands each record from {@code fromLsn} (the WAL's first when below it) to {@code out} until it returns false.
     * Damage met before the LSN recovery reads from goes to {@code unread}, and reading goes on past it.
     *
     * @throws IllegalArgumentException if {@code fromLsn} lies beyond the WAL's end, or the directory holds no store
     */
    public static void read(VarveConfig config, long fromLsn, Predicate<Record> out, Consumer<UnreadDamage> unread) {
        if (config == null) throw new IllegalArgumentException("config must not be null");
        if (out == null) throw new IllegalArgumentException("out must not be null");
        if (unread == null) throw new IllegalArgumentException("unread must not be null");
        StoreInspector.requireStore(config.path(), "");
        StoreLock.whileShared(config.path(), () -> {
            Map<Integer, String> names = catalogNames(config);
            try (Opened o = open(config)) {
                if (fromLsn > o.wal.position()) throw new IllegalArgumentException("LSN " + fromLsn + " lies beyond the WAL's end " + o.wal.position());
                o.records(Math.max(fromLsn, o.wal.firstLsn()), r -> out.test(decode(r, names)), unread);
            }
            return null;
        });
    }

    /**
     * The LSN of the first record recovery would apply that carries a write — a batch, a table created, a partition
     * destroyed — or -1 when none does: what a copy of the page files alone (a salvage of a store that does not open)
     * leaves out. A WAL holding after the checkpoint's mark only what writes nothing (the next checkpoint's
     * CHECKPOINT_STARTED, snapshot declarations, page images) loses no entry. Reads as {@link #read} does.
     *
     * @throws CorruptionException if the WAL cannot be read where recovery reads it
     */
    static long firstWriteRecoveryApplies(VarveConfig config) {
        return StoreLock.whileShared(config.path(), () -> {
            try (Opened o = open(config); WalReader r = o.wal.read(o.recoveryFrom)) {
                while (r.next()) {
                    int type = r.type();
                    if (type == RecordTypes.DATA_BATCH || type == RecordTypes.CREATE_TABLE || type == RecordTypes.DESTROY_PARTITION) return r.lsn();
                }
                return -1L;
            }
        });
    }

    /** The WAL as the store's open leaves it (in memory), and the LSN recovery reads it from. */
    private record Opened(Wal wal, long recoveryFrom) implements AutoCloseable {
        /**
         * Hands each record from {@code from} to {@code each} until it returns false: those before
         * {@link #recoveryFrom} as {@link #unreadPart} reads them, then the rest, which the open validated (damage
         * there is a failure, as it is to open).
         */
        void records(long from, Predicate<WalReader> each, Consumer<UnreadDamage> unread) {
            if (from < recoveryFrom && !unreadPart(from, each, unread)) return;
            try (WalReader r = wal.read(Math.max(from, recoveryFrom))) {
                while (r.next()) if (!each.test(r)) return;
            }
        }

        /**
         * Hands each record from {@code from} up to {@link #recoveryFrom} to {@code each}; returns false when it
         * returned false. No recovery reads these records and the open did not check them: one that fails its checks
         * goes to {@code unread}, and reading goes on from the next record that checks out (at recoveryFrom when the
         * segment cannot be read at all). A record at recoveryFrom or after is left to the caller, read from there.
         */
        boolean unreadPart(long from, Predicate<WalReader> each, Consumer<UnreadDamage> unread) {
            WalReader r;
            try {
                r = wal.read(from);
            } catch (CorruptionException e) { // the segment reading starts in is unreadable
                unread.accept(new UnreadDamage(from, e.file(), e.offset(), e.what(), recoveryFrom, recoveryFrom));
                return true;
            }
            try (r) {
                while (true) {
                    try {
                        if (!r.next() || r.lsn() >= recoveryFrom) return true;
                        if (!each.test(r)) return false;
                    } catch (CorruptionException e) {
                        long lsn = r.nextLsn();
                        if (lsn >= recoveryFrom) return true; // validated by the open: read again from recoveryFrom, where it fails as it should
                        long resume = r.skipDamaged();
                        unread.accept(new UnreadDamage(lsn, e.file(), e.offset(), e.what(), recoveryFrom, Math.min(resume, recoveryFrom)));
                        if (resume >= recoveryFrom) return true;
                    }
                }
            }
        }

        @Override
        public void close() {
            wal.close();
        }
    }

    /**
     * Opens the WAL as {@link Engine} does: the checkpoint markers say where recovery starts reading, and the WAL is
     * validated from there under the store's walSyncMode, each segment checked against the store's id the markers hold.
     * Markers that cannot say (damaged; the store does not open) leave the whole WAL to validate, any segment taken as
     * the store's, so the records can still be shown.
     */
    private static Opened open(VarveConfig config) {
        MemoryOverlayIO io = new MemoryOverlayIO();
        Path dir = config.path().resolve("wal");
        CheckpointMarkers markers = new CheckpointMarkers(io, config.path().resolve("checkpoints"));
        RecoveryStart start;
        try {
            start = RecoveryStart.decide(markers, config.pageSize());
        } catch (CorruptionException e) {
            start = null;
        }
        long storeId = start == null ? 0 : durableStoreId(markers, start);
        WalOpenScan scan;
        try {
            scan = WalOpenScan.run(io, dir, config.walSegmentSize(), config.walSyncMode(), start == null ? -1 : start.walScanFrom(config.walSegmentSize()), false,
                    null, storeId);
        } catch (CorruptionException e) {
            throw start == null ? e : start.explain(e, markers);
        }
        Wal wal = Wal.open(scan, config.walFlushFrequency(), Agents.dedicated(), true); // the overlay: nothing reaches the files
        return new Opened(wal, start == null ? wal.firstLsn() : start.walScanFrom(config.walSegmentSize()));
    }

    /**
     * The store's id the markers hold, which every WAL segment that names a store must name, as open checks it; 0 when
     * none does or an end marker is too damaged to say (the store does not open; its records can still be shown).
     */
    private static long durableStoreId(CheckpointMarkers markers, RecoveryStart start) {
        try {
            return PageFileGenerations.load(markers, start.latest()).durableId();
        } catch (CorruptionException e) {
            return 0;
        }
    }

    /** Table names by id from the catalog's leaves in the page file (as of the last checkpoint; damaged leaves skipped). */
    private static Map<Integer, String> catalogNames(VarveConfig config) {
        Map<Integer, String> names = new HashMap<>();
        try (PageStore pages = new PageStore(new MemoryOverlayIO(), config.path().resolve("pages"), config.pageSize())) {
            if (!pages.exists(Catalog.FILE_ID)) return names;
            LeafSalvage.salvage(pages, Catalog.FILE_ID, new LeafSalvage.Sink() {
                @Override
                public void entry(byte[] key, byte[] value) {
                    Catalog.Entry e = Catalog.decode(new String(key, StandardCharsets.UTF_8), value);
                    names.put(e.id(), e.name());
                }

                @Override
                public void lost(long pageId, byte[] key, String why) {
                    // a name it held shows as its id only; verify reports the page
                }
            });
        } catch (StorageException e) {
            // no readable catalog: ids only
        }
        return names;
    }

    private static Record decode(WalReader r, Map<Integer, String> names) {
        int bytes = r.payload().remaining();
        switch (r.type()) {
            case RecordTypes.DATA_BATCH: {
                List<Op> ops = new ArrayList<>();
                int snapshotRank = LogicalRecords.forEachOp(r.payload(), (fileId, b, keyOffset, keyLength, valueOffset, valueLength) ->
                        ops.add(new Op(PageId.tableOf(fileId), names.get(PageId.tableOf(fileId)), PageId.partitionOf(fileId),
                                LogicalRecords.copy(b, keyOffset, keyLength), valueLength)));
                return new Record(r.lsn(), "DATA_BATCH", bytes, ops, ops.size() + " operations" + (snapshotRank > 0 ? ", then a snapshot of rank " + snapshotRank : ""));
            }
            case RecordTypes.CREATE_TABLE: {
                LogicalRecords.CreateTable c = LogicalRecords.decodeCreateTable(r.payload().duplicate());
                names.put(c.tableId(), c.name());
                return new Record(r.lsn(), "CREATE_TABLE", bytes, List.of(), "table " + c.name() + " id " + c.tableId() + ", " + c.options());
            }
            case RecordTypes.DESTROY_PARTITION: {
                int fileId = LogicalRecords.decodeDestroy(r.payload().duplicate());
                return new Record(r.lsn(), "DESTROY_PARTITION", bytes, List.of(), "table " + PageId.tableOf(fileId) + " partition " + PageId.partitionOf(fileId));
            }
            case RecordTypes.SNAPSHOT: {
                LogicalRecords.Snapshot s = LogicalRecords.decodeSnapshot(r.payload().duplicate());
                return new Record(r.lsn(), "SNAPSHOT", bytes, List.of(), "snapshot " + s.id() + " rank " + s.rank() + " declared " + java.time.Instant.ofEpochMilli(s.declaredMillis()));
            }
            case RecordTypes.RANK: {
                LogicalRecords.Snapshot s = LogicalRecords.decodeRank(r.payload().duplicate());
                return new Record(r.lsn(), "RANK", bytes, List.of(), "snapshot " + s.id() + " raised to rank " + s.rank());
            }
            case RecordTypes.PAGE_IMAGE:
                return new Record(r.lsn(), "PAGE_IMAGE", bytes, List.of(), "page " + PageId.toString(r.payload().getLong(0)));
            case RecordTypes.PAGE_IMAGE_SKIP_GARBAGE:
                return new Record(r.lsn(), "PAGE_IMAGE_SKIP_GARBAGE", bytes, List.of(), "page " + PageId.toString(r.payload().getLong(0))
                        + " without [" + r.payload().getInt(8) + ", " + r.payload().getInt(12) + ")");
            case RecordTypes.PAGE_IMAGE_SNAPPY:
                return new Record(r.lsn(), "PAGE_IMAGE_SNAPPY", bytes, List.of(), "page " + PageId.toString(r.payload().getLong(0)) + ", compressed");
            case RecordTypes.PAGE_DELTA:
                return new Record(r.lsn(), "PAGE_DELTA", bytes, List.of(), "page " + PageId.toString(r.payload().getLong(0))
                        + ", " + (r.payload().getShort(8) & 0xFFFF) + " ranges");
            case RecordTypes.PAGE_REBUILD:
                return new Record(r.lsn(), "PAGE_REBUILD", bytes, List.of(), "page " + PageId.toString(r.payload().getLong(0))
                        + (r.payload().get(16) != 0 ? " (new)" : "") + " from page " + PageId.toString(r.payload().getLong(8))
                        + ", " + (r.payload().getShort(17) & 0xFFFF) + " ops");
            case RecordTypes.CHECKPOINT_STARTED:
                return new Record(r.lsn(), "CHECKPOINT_STARTED", bytes, List.of(), "checkpoint " + r.payload().getLong(0));
            default:
                return new Record(r.lsn(), "TYPE_" + r.type(), bytes, List.of(), "");
        }
    }
}
