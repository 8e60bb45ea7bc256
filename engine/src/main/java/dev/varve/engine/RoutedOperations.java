package dev.varve.engine;

/**
 * The key operations a {@link Table} and a {@link Partition} share: each routes the key to its partition (the one
 * difference between them, {@link #route}), then hands the operation to the engine.
 */
abstract class RoutedOperations {
    final Engine engine;

    RoutedOperations(Engine engine) {
        this.engine = engine;
    }

    /** The partition that holds {@code key}; validates the key and throws IllegalArgumentException when it cannot go there. */
    abstract PartitionHandle route(byte[] key);

    public void put(byte[] key, byte[] value) {
        PartitionHandle h = route(key);
        engine.limits.checkValue(value);
        engine.writePath.write(h, key, value);
    }

    public byte[] get(byte[] key) {
        return engine.get(route(key), key);
    }

    public boolean remove(byte[] key) {
        return engine.writePath.write(route(key), key, null);
    }
}
