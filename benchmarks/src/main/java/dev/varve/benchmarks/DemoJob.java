package dev.varve.benchmarks;

import dev.varve.config.VarveConfig;
import dev.varve.engine.Cursor;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;

import java.io.IOException;
import java.io.PrintStream;
import java.util.Arrays;

/**
 * The default job: writes {@code --keys} keys with 100-byte values, closes, reopens (the open is timed: it is the
 * recovery), reads every key back and verifies it, scans the table in key order, and prints throughput and the
 * store's metrics. Any mismatch ends the job with a message naming the key.
 */
final class DemoJob {
    static final int VALUE_BYTES = 100;
    static final String TABLE = "demo";

    /** A read-back that does not match what was written. */
    static final class MismatchException extends Exception {
        private static final long serialVersionUID = 1L;

        MismatchException(String message) {
            super(message);
        }
    }

    private final Options opts;
    private final PrintStream out;

    DemoJob(Options opts, PrintStream out) {
        this.opts = opts;
        this.out = out;
    }

    @SuppressWarnings("try") // the store is closed inside its try, to time the closing checkpoint
    void run() throws IOException, MismatchException {
        StoreDirs.wipe(opts.dir);
        VarveConfig cfg = opts.config(opts.dir).build();
        out.printf("demo: %,d keys, %d-byte values, %s, %s, %s, store %s%n", opts.keys, VALUE_BYTES, cfg.recoveryMode(),
                cfg.recoveryCompression(), cfg.walSyncMode(), opts.dir.toAbsolutePath());

        long t0 = System.nanoTime();
        try (Varve store = Varve.open(cfg)) {
            long opened = System.nanoTime();
            out.printf("open (new store)     %8.1f ms%n", ms(opened - t0));
            write(store.table(TABLE));
            long closing = System.nanoTime();
            store.close();
            out.printf("close                %8.1f ms  (final checkpoint)%n", ms(System.nanoTime() - closing));
            out.println("  write session: " + store.metrics());
            out.println("  last " + store.metrics().lastCheckpoint());
        }

        long t1 = System.nanoTime();
        try (Varve store = Varve.open(cfg)) {
            out.printf("reopen (recovery)    %8.1f ms  %s%n", ms(System.nanoTime() - t1), store.recoveryReport());
            Table table = store.table(TABLE);
            readBack(table);
            scan(table);
            out.println("  read session: " + store.metrics());
            out.println("  last " + store.metrics().lastCheckpoint());
        }
        out.printf("store on disk %,d bytes; verified %,d keys: OK%n", StoreDirs.size(opts.dir), opts.keys);
    }

    private void write(Table table) {
        byte[] value = new byte[VALUE_BYTES];
        long t = System.nanoTime();
        for (long id = 0; id < opts.keys; id++) {
            Values.fill(value, id);
            table.put(Keys.of(id), value);
        }
        rate("put", opts.keys, System.nanoTime() - t);
    }

    private void readBack(Table table) throws MismatchException {
        long t = System.nanoTime();
        for (long id = 0; id < opts.keys; id++) {
            byte[] v = table.get(Keys.of(id));
            if (!Values.matches(v, id, VALUE_BYTES)) throw mismatch("get", id, v);
        }
        rate("get", opts.keys, System.nanoTime() - t);
    }

    private void scan(Table table) throws MismatchException {
        long t = System.nanoTime();
        long expected = 0;
        try (Cursor c = table.scan(null, null)) {
            while (c.next()) {
                byte[] k = c.key();
                if (k.length != Keys.KEY_BYTES || Keys.idOf(k) != expected)
                    throw new MismatchException("scan: entry " + expected + " has key " + Arrays.toString(k) + ", expected key " + expected);
                if (!Values.matches(c.value(), expected, VALUE_BYTES)) throw mismatch("scan", expected, c.value());
                expected++;
            }
        }
        if (expected != opts.keys) throw new MismatchException("scan: found " + expected + " entries, expected " + opts.keys);
        rate("scan", expected, System.nanoTime() - t);
    }

    private static MismatchException mismatch(String op, long id, byte[] v) {
        String got = v == null ? "no value" : v.length + " bytes " + (v.length == VALUE_BYTES ? "with other content" : "");
        return new MismatchException(op + ": key " + id + " has " + got.trim() + ", expected the " + VALUE_BYTES + " bytes written");
    }

    private void rate(String op, long n, long nanos) {
        out.printf("%-5s %,12d ops  %8.1f ms  %,12.0f ops/s%n", op, n, ms(nanos), n / (nanos / 1e9));
    }

    private static double ms(long nanos) {
        return nanos / 1e6;
    }
}
