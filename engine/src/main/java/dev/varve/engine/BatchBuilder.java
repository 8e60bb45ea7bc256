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
    private record Added(String table, byte[] key, byte[] value) {
    }

    private final Engine engine;
    private final List<Added> added = new ArrayList<>();

    BatchBuilder(Engine engine) {
        this.engine = engine;
    }

    @Override
    public WriteBatch put(String table, byte[] key, byte[] value) {
        engine.checkTableName(table);
        engine.checkKey(key);
        engine.checkValue(value);
        added.add(new Added(table, key.clone(), value.clone()));
        return this;
    }

    @Override
    public WriteBatch remove(String table, byte[] key) {
        engine.checkTableName(table);
        engine.checkKey(key);
        added.add(new Added(table, key.clone(), null));
        return this;
    }

    /** Checks the batch's size, creates the tables it names that do not exist yet, and resolves partitions. */
    List<LogicalRecords.Op> ops() {
        int bytes = 4;
        long keyAndValueBytes = 0;
        Set<String> names = new LinkedHashSet<>();
        for (Added a : added) {
            bytes += new LogicalRecords.Op(0, a.key(), a.value()).encodedBytes();
            keyAndValueBytes += a.key().length + (a.value() == null ? 0 : a.value().length);
            names.add(a.table());
        }
        engine.checkBatch(bytes, keyAndValueBytes, added.size());
        for (String n : names) engine.table(n);
        List<LogicalRecords.Op> ops = new ArrayList<>(added.size());
        for (Added a : added) ops.add(new LogicalRecords.Op(engine.table(a.table()).handleFor(a.key()).fileId, a.key(), a.value()));
        return ops;
    }
}
