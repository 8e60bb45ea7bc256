package dev.varve.cli;

import dev.varve.engine.Cursor;
import dev.varve.engine.Varve;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code varve scan DIR --table T [--from K] [--to K]}: entries in key order. */
@Command(name = "scan", mixinStandardHelpOptions = true,
        description = {"Prints the entries of a table in key order, one \"key<TAB>value\" line each (--json: one JSON object per line), "
                + "now or as of a snapshot, optionally from --from (inclusive) to --to (exclusive). Read-only."})
final class ScanCommand implements Callable<Integer> {
    @Mixin
    StoreOptions store;

    @Mixin
    ReadOptions read;

    @Option(names = "--table", required = true, paramLabel = "T", description = "The table.")
    String table;

    @Mixin
    RangeOptions range;

    @Option(names = "--limit", paramLabel = "N", description = "At most N entries (default: all).")
    Long limit;

    @Mixin
    OutputOptions output;

    @Override
    public Integer call() {
        if (limit != null && limit < 0) throw new IllegalArgumentException("--limit must be >= 0, was " + limit);
        byte[] lo = range.lo(read.encoding);
        byte[] hi = range.hi(read.encoding);
        PrintWriter out = output.out();
        try (Varve s = store.openReadOnly(); ReadOptions.Source src = new ReadOptions.Source(s, read.asOf);
             Cursor c = src.table(table).scan(lo, hi)) {
            for (long n = 0; (limit == null || n < limit) && c.next(); n++) {
                if ((n & 1023) == 1023 && out.checkError()) break; // the reader went away (head -1): stop; Main says so
                String k = read.encoding.encode(c.key());
                String v = read.encoding.encode(c.value());
                if (output.json) {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("key", k);
                    m.put("value", v);
                    out.println(Json.of(m));
                } else {
                    out.println(k + "\t" + v);
                }
            }
        }
        out.flush();
        return Main.OK;
    }
}
