package dev.varve.engine;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Collects the operations of {@link Varve#write}. Every argument is checked as it is added, and the whole batch
 * before anything happens: a rejected batch logs nothing and creates no table. Keys and values are copied, so the
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

    /**
     * Checks the batch's size (its record holding {@code extraBytes} more than its operations) and every operation
     * against the tables that exist, and what the write path would refuse it for
     * ({@link WritePath#checkBeforeCreating}), then creates the hash-placed tables it names that do not exist yet,
     * and resolves partitions.
     */
    List<LogicalRecords.Op> ops(int extraBytes) {
        taken = true;
        long bytes = 4; // a long: values of up to 2 GiB each, many in a batch, would wrap an int past the WAL check
        long keyAndValueBytes = 0;
        Set<String> missing = new LinkedHashSet<>();
        List<LogicalRecords.Op> existing = new ArrayList<>(added.size());
        for (Added a : added) {
            bytes += new LogicalRecords.Op(0, a.key(), a.value()).encodedBytes();
            keyAndValueBytes += a.key().length + (a.value() == null ? 0 : a.value().length);
            TableHandle t = engine.existingTable(a.table());
            if (t != null) existing.add(new LogicalRecords.Op(resolve(t, a).fileId, a.key(), a.value()));
            else if (a.partition() != BY_HASH) throw new IllegalArgumentException("table " + a.table()
                    + " does not exist; create it with store.table(name, options) before writing to one of its partitions");
            else missing.add(a.table());
        }
        engine.limits.checkBatch(bytes + extraBytes, keyAndValueBytes, added.size());
        if (!missing.isEmpty()) { // the catalog's lock, only for a batch that creates a table
            engine.checkTablesCreatable(missing);
            engine.writePath.checkBeforeCreating(keyAndValueBytes, added.size(), existing);
            for (String n : missing) engine.table(n);
        }
        List<LogicalRecords.Op> ops = new ArrayList<>(added.size());
        for (Added a : added) ops.add(new LogicalRecords.Op(resolve(engine.table(a.table()), a).fileId, a.key(), a.value()));
        return ops;
    }

    private static PartitionHandle resolve(TableHandle t, Added a) {
        return a.partition() == BY_HASH ? t.handleFor(a.key()) : t.handleFor(a.partition(), a.key());
    }
}
