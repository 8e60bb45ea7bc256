package dev.varve.server;

import dev.varve.engine.Varve;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * A seeded write load over three tables, with its model: mostly small values, some larger than a page (overflow
 * chains), overwrites and removes. The same seed and step count give the same store content, so a parent JVM can
 * rebuild the model of what a child wrote.
 */
public final class Workload {
    static final String[] TABLES = {"accounts", "blobs", "orders"};

    private final Random rnd;
    private final int keys;
    private final boolean modelled;
    private final Map<String, TreeMap<String, byte[]>> model = new TreeMap<>();
    private long steps;
    private long bytesWritten;

    public Workload(long seed, int keys) {
        this(seed, keys, true);
    }

    /** Without a model ({@code modelled} false) the load holds no values: for a writer that runs on and on. */
    Workload(long seed, int keys, boolean modelled) {
        this.rnd = new Random(seed);
        this.keys = keys;
        this.modelled = modelled;
        for (String t : TABLES) model.put(t, new TreeMap<>());
    }

    /** Creates the tables (so an image holds them even while empty). */
    public void createTables(Varve store) {
        for (String t : TABLES) store.table(t);
    }

    /** One write, applied to the store and the model. */
    public void step(Varve store) {
        String table = TABLES[rnd.nextInt(TABLES.length)];
        String key = String.format("k%07d", rnd.nextInt(keys));
        int dice = rnd.nextInt(100);
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        bytesWritten += k.length;
        if (dice < 8) {
            if (store != null) store.table(table).remove(k);
            if (modelled) model.get(table).remove(key);
        } else {
            int size = table.equals("blobs") || dice < 18 ? 4096 + rnd.nextInt(20_000) : 16 + rnd.nextInt(300);
            byte[] v = new byte[size];
            rnd.nextBytes(v);
            bytesWritten += size;
            if (store != null) store.table(table).put(k, v);
            if (modelled) model.get(table).put(key, v);
        }
        steps++;
    }

    /** Advances the model only (rebuilding what a child JVM wrote). */
    void replay(long count) {
        for (long i = 0; i < count; i++) step(null);
    }

    /** Takes keys out of the model (the test removed them from the store another way). */
    void forget(String table, java.util.Collection<String> keys) {
        model.get(table).keySet().removeAll(keys);
    }

    /** Key and value bytes of every write so far: what a follow stream carries, unlike the WAL's page records. */
    long bytesWritten() {
        return bytesWritten;
    }

    long steps() {
        return steps;
    }

    /** A deep-enough copy of the model now (values are never mutated). */
    public Map<String, TreeMap<String, byte[]>> snapshot() {
        Map<String, TreeMap<String, byte[]>> copy = new TreeMap<>();
        model.forEach((t, m) -> copy.put(t, new TreeMap<>(m)));
        return copy;
    }
}
