package dev.varve.engine;

/**
 * How a table places its keys, chosen when the table is created and kept in the catalog.
 *
 * <ul>
 *   <li>{@link #hashPlaced(int)}: Varve picks a key's partition from the key's hash (what {@link Varve#table(String)}
 *       creates, with the configured partition count). Every operation of {@link Table} works; {@link Partition}
 *       writes reject keys that hash elsewhere.</li>
 *   <li>{@link #callerPlaced(int)}: the caller names the partition of every key, as a data grid does with its own
 *       segments. {@code table.partition(p)} stores any key in partition {@code p}, so the same key may live in
 *       several partitions. Because the table cannot know where a key lives, its table-level {@code put},
 *       {@code get} and {@code remove} throw {@link IllegalArgumentException}; use {@link Table#partition(int)} or
 *       {@link WriteBatch#put(String, int, byte[], byte[])}. A table-level scan merges every partition (a key held in
 *       several partitions appears once per partition).</li>
 * </ul>
 * Value object: equal options are interchangeable.
 */
public final class TableOptions {
    /** Most partitions a table may have (each is its own page file). */
    public static final int MAX_PARTITIONS = 4096;

    /** Who decides which partition a key lives in. */
    public enum Placement {
        /** Varve, from the key's hash. */
        HASH,
        /** The caller, per operation. */
        CALLER
    }

    private final Placement placement;
    private final int partitions;

    private TableOptions(Placement placement, int partitions) {
        if (partitions < 1 || partitions > MAX_PARTITIONS)
            throw new IllegalArgumentException("partitions must be in [1, " + MAX_PARTITIONS + "], was " + partitions);
        this.placement = placement;
        this.partitions = partitions;
    }

    /** A table whose keys Varve places by hash over {@code partitions} partitions (1 to {@link #MAX_PARTITIONS}). */
    public static TableOptions hashPlaced(int partitions) {
        return new TableOptions(Placement.HASH, partitions);
    }

    /** A table of {@code partitions} partitions (1 to {@link #MAX_PARTITIONS}) whose keys the caller places. */
    public static TableOptions callerPlaced(int partitions) {
        return new TableOptions(Placement.CALLER, partitions);
    }

    /** Who places keys. */
    public Placement placement() {
        return placement;
    }

    /** Number of partitions. */
    public int partitions() {
        return partitions;
    }

    /** True for {@link Placement#CALLER}. */
    public boolean callerPlaced() {
        return placement == Placement.CALLER;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TableOptions t && t.placement == placement && t.partitions == partitions;
    }

    @Override
    public int hashCode() {
        return placement.hashCode() * 31 + partitions;
    }

    @Override
    public String toString() {
        return (callerPlaced() ? "caller-placed" : "hash-placed") + ", " + partitions + " partitions";
    }
}
