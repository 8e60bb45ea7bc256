package dev.varve.engine;

import dev.varve.core.page.PageId;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Collects the operations of {@link Varve#write}. Every argument is checked as it is added, and the whole batch
 * before anything happens: a rejected batch logs nothing and creates no table. A hash-placed table that does not exist
 * is created by a put to it, never by a remove (which removes nothing from it). Keys and values are copied, so the
 * caller may reuse its arrays.
 */
final class BatchBuilder implements WriteBatch {
    /** No partition named: the table places the key by hash. */
    private static final int BY_HASH = -1;

    private record Added(String table, int partition, byte[] key, byte[] value) {
    }

    private final Engine engine;
    private final List<Added> added = new ArrayList<>();
    /** Set once the write took the batch: an operation added later would be lost, so it is refused. */
    private boolean taken;

    BatchBuilder(Engine engine) {
        this.engine = engine;
    }

    @Override
    public WriteBatch put(String table, byte[] key, byte[] value) {
        engine.limits.checkValue(value);
        return add(table, BY_HASH, key, value);
    }

    @Override
    public WriteBatch remove(String table, byte[] key) {
        return add(table, BY_HASH, key, null);
    }

    @Override
    public WriteBatch put(String table, int partition, byte[] key, byte[] value) {
        checkPartition(partition);
        engine.limits.checkValue(value);
        return add(table, partition, key, value);
    }

    @Override
    public WriteBatch remove(String table, int partition, byte[] key) {
        checkPartition(partition);
        return add(table, partition, key, null);
    }

    private static void checkPartition(int partition) {
        if (partition < 0) throw new IllegalArgumentException("partition " + partition + " is negative");
    }

    private WriteBatch add(String table, int partition, byte[] key, byte[] value) {
        if (taken) throw new IllegalStateException("this WriteBatch was already written; add operations only inside the write call that gave it");
        engine.checkTableName(table);
        engine.limits.checkKey(key);
        added.add(new Added(table, partition, key.clone(), value == null ? null : value.clone()));
        return this;
    }

    /** Logs a checked batch: its operations, and the hash-placed tables it creates (none, {@link TableRegistry.NewTables#NONE}). */
    interface Write<T> {
        T apply(List<LogicalRecords.Op> ops, TableRegistry.NewTables created);
    }

    /**
     * Checks the batch's size (its record holding {@code extraBytes} more than its operations) and every operation,
     * resolves partitions and has {@code write} log it. A batch naming hash-placed tables that do not exist yet runs
     * under the catalog lock ({@link TableRegistry#creating}), and its write creates them only once nothing can refuse
     * it any more: a refused batch creates no table.
     */
    <T> T write(int extraBytes, Write<T> write) {
        taken = true;
        long bytes = 4; // a long: values of up to 2 GiB each, many in a batch, would wrap an int past the WAL check
        long keyAndValueBytes = 0;
        Set<String> missing = new LinkedHashSet<>();
        Set<String> putTo = new LinkedHashSet<>();
        for (Added a : added) if (a.value() != null) putTo.add(a.table());
        List<LogicalRecords.Op> existing = new ArrayList<>(added.size());
        for (Added a : added) {
            bytes += new LogicalRecords.Op(0, a.key(), a.value()).encodedBytes();
            keyAndValueBytes += a.key().length + (a.value() == null ? 0 : a.value().length);
            TableHandle t = engine.existingTable(a.table());
            if (t != null) existing.add(new LogicalRecords.Op(resolve(t, a).fileId, a.key(), a.value()));
            else if (a.partition() != BY_HASH) throw new IllegalArgumentException("table " + a.table()
                    + " does not exist; create it with store.table(name, options) before writing to one of its partitions");
            // a remove from a table that does not exist removes nothing: it creates the table only with a put beside it
            else if (putTo.contains(a.table())) missing.add(a.table());
        }
        engine.limits.checkBatch(bytes + extraBytes, keyAndValueBytes, added.size());
        if (missing.isEmpty()) return write.apply(existing, TableRegistry.NewTables.NONE);
        return engine.tables.creating(missing, created -> {
            // again under the catalog lock: a table another thread created meanwhile is used as it is
            List<LogicalRecords.Op> ops = new ArrayList<>(added.size());
            for (Added a : added) {
                Catalog.Entry e = created.entry(a.table());
                TableHandle t = e == null ? engine.existingTable(a.table()) : null;
                if (e == null && t == null) continue; // a remove from a table neither there nor made by this batch
                int fileId = e == null ? resolve(t, a).fileId : PageId.fileId(e.id(), KeyHash.partition(a.key(), e.partitions()));
                ops.add(new LogicalRecords.Op(fileId, a.key(), a.value()));
            }
            return write.apply(ops, created);
        });
    }

    private static PartitionHandle resolve(TableHandle t, Added a) {
        return a.partition() == BY_HASH ? t.handleFor(a.key()) : t.handleFor(a.partition(), a.key());
    }
}
