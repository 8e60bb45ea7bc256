package dev.varve.cli;

import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code varve dump DIR --out FILE}: tables to a file that {@code varve load} reads. */
@Command(name = "dump", mixinStandardHelpOptions = true,
        description = {"Writes every entry of the given tables (default: all), now or as of a snapshot, optionally in [--from, --to), to a "
                + "dump file that `varve load` reads back into a new store. Read-only on the store.",
                "The dump is written under a temporary name beside FILE (.FILE.<random>.partial) and given the name FILE only once whole "
                        + "and on disk, and only if FILE does not exist by then (of two dumps to one FILE, the second to finish is refused): "
                        + "FILE never holds a partial dump, nor one that replaced another. A run killed half-way leaves the temporary file, "
                        + "which may be deleted."})
final class DumpCommand implements Callable<Integer> {
    @Mixin
    StoreOptions store;

    @Mixin
    ReadOptions read;

    @Option(names = "--table", paramLabel = "T", description = "A table to dump (repeatable; default: every table).")
    List<String> tables;

    @Mixin
    RangeOptions range;

    @Option(names = "--out", required = true, paramLabel = "FILE", description = "The dump file to write (must not exist).")
    Path out;

    @Mixin
    OutputOptions output;

    @Override
    public Integer call() throws IOException {
        if (Files.exists(out)) throw exists();
        Main.refuseInsideSource("--out", out, store.dir, store.layout);
        Path parent = out.toAbsolutePath().getParent();
        if (!Files.isDirectory(parent)) throw new IllegalArgumentException("cannot write " + out + ": no such directory " + parent);
        byte[] lo = range.lo(read.encoding);
        byte[] hi = range.hi(read.encoding);
        Map<String, Object> perTable = new LinkedHashMap<>();
        try (Varve s = store.openReadOnly(); ReadOptions.Source src = new ReadOptions.Source(s, read.asOf)) {
            Map<String, Table> named = new LinkedHashMap<>(); // an unknown name is refused before the file is created
            for (String name : tables == null ? src.tables() : tables) named.put(name, src.table(name));
            try (DumpFile.Writer w = new DumpFile.Writer(out)) {
                for (Map.Entry<String, Table> e : named.entrySet()) {
                    String name = e.getKey();
                    Table table = e.getValue();
                    w.table(name, table.options());
                    long before = w.entries();
                    if (table.options().callerPlaced()) { // a key may be in several partitions: each copy with its own
                        for (int p = 0; p < table.partitions(); p++) {
                            int partition = p;
                            src.forEach(table.partition(p), lo, hi, (k, v) -> w.entry(partition, k, v));
                        }
                    } else {
                        src.forEach(name, lo, hi, w::entry);
                    }
                    perTable.put(name, w.entries() - before);
                }
                try {
                    w.end(); // only now does a file have the name --out: a dump cut short leaves none
                } catch (FileAlreadyExistsException e) { // another run wrote it meanwhile: its dump stays, this one is refused as above
                    throw exists();
                }
            }
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("dump", out.toString());
        r.put("asOf", read.asOf == null ? "current state" : read.asOf);
        r.put("entries", perTable);
        output.print(r);
        return Main.OK;
    }

    /** --out names a file that exists, found before the dump or when it was to be given the name: a bad command line. */
    private IllegalArgumentException exists() {
        return new IllegalArgumentException(out + " exists; dump writes a new file");
    }
}
