package dev.varve.engine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Collects the operations of {@link Varve#write}. Every argument is checked as it is added, so a bad operation
 * fails before anything is logged; keys and values are copied, so the caller may reuse its arrays.
 */
final class BatchBuilder implements WriteBatch {
    private final Engine engine;
    private final List<LogicalRecords.Op> ops = new ArrayList<>();

    BatchBuilder(Engine engine) {
        this.engine = engine;
    }

    @Override
    public WriteBatch put(String table, byte[] key, byte[] value) {
        PartitionHandle h = engine.table(table).handleFor(key);
        engine.checkValue(value);
        ops.add(new LogicalRecords.Op(h.fileId, key.clone(), Arrays.copyOf(value, value.length)));
        return this;
    }

    @Override
    public WriteBatch remove(String table, byte[] key) {
        PartitionHandle h = engine.table(table).handleFor(key);
        ops.add(new LogicalRecords.Op(h.fileId, key.clone(), null));
        return this;
    }

    List<LogicalRecords.Op> ops() {
        return ops;
    }
}
