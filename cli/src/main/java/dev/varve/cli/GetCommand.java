package dev.varve.cli;

import dev.varve.engine.Varve;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code varve get DIR --table T KEY}: one value. */
@Command(name = "get", mixinStandardHelpOptions = true,
        description = {"Prints the value of one key, now or as of a snapshot. Read-only.", "Exit code 3 when the key is absent."})
final class GetCommand implements Callable<Integer> {
    @Mixin
    StoreOptions store;

    @Mixin
    ReadOptions read;

    @Option(names = "--table", required = true, paramLabel = "T", description = "The table.")
    String table;

    @Parameters(index = "1", paramLabel = "KEY", description = "The key, in --encoding.")
    String key;

    @Mixin
    OutputOptions output;

    @Override
    public Integer call() {
        byte[] k = read.encoding.decode(key);
        byte[] v;
        try (Varve s = store.openReadOnly(); ReadOptions.Source src = new ReadOptions.Source(s, read.asOf)) {
            v = src.table(table).get(k);
        }
        PrintWriter out = output.out();
        if (output.json) {
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("key", read.encoding.encode(k));
            r.put("found", v != null);
            r.put("value", v == null ? null : read.encoding.encode(v));
            out.println(Json.of(r));
        } else if (v != null) {
            out.println(read.encoding.encode(v));
        }
        out.flush();
        return v == null ? Main.ABSENT : Main.OK;
    }
}
