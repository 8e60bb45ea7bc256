package dev.varve.benchmarks;

import dev.varve.config.WalSyncMode;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What one {@link CompareSetup} did in one {@link ComparePhase}: scalar figures by name (absent where the system has no
 * such figure), a time series sampled every {@link CompareChild#SAMPLE_MILLIS} ms ({@code {ms since start, puts so far,
 * checkpoint-buffer pages, dirty pages}}, -1 where unknown), the configuration in words, or the error that stopped it.
 *
 * <p>On disk (the child's result file) one line each: {@code D description}, {@code P PHASE key=value ...},
 * {@code T PHASE ms puts buffer dirty}, {@code E PHASE message}.
 */
record PhaseResult(CompareSetup setup, ComparePhase phase, WalSyncMode sync, Map<String, Long> values, List<long[]> series,
                   String description, String error) {

    /** A figure, or null. */
    Long get(String key) {
        return values.get(key);
    }

    double putsPerSecond() {
        Long ops = get("ops");
        Long nanos = get("nanos");
        return ops == null || nanos == null || nanos == 0 ? 0 : ops / (nanos / 1e9);
    }

    String serialize() {
        StringBuilder sb = new StringBuilder("P ").append(phase.name());
        values.forEach((k, v) -> sb.append(' ').append(k).append('=').append(v));
        sb.append('\n');
        for (long[] t : series) sb.append("T ").append(phase.name()).append(' ').append(t[0]).append(' ').append(t[1]).append(' ')
                .append(t[2]).append(' ').append(t[3]).append('\n');
        return sb.toString();
    }

    /**
     * The phases of one child's result file; a phase asked for but missing from the file, or measured after the child's
     * warm-up failed, comes back with an error.
     */
    static List<PhaseResult> read(Path file, CompareSetup setup, WalSyncMode sync, List<ComparePhase> asked, String failure)
            throws IOException {
        String description = "";
        Map<ComparePhase, Map<String, Long>> values = new LinkedHashMap<>();
        Map<ComparePhase, List<long[]>> series = new LinkedHashMap<>();
        Map<ComparePhase, String> errors = new LinkedHashMap<>();
        String warmupError = null;
        if (Files.exists(file)) {
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                if (line.length() < 2) continue;
                String rest = line.substring(2);
                switch (line.charAt(0)) {
                    case 'D' -> description = rest;
                    case 'P' -> {
                        String[] f = rest.split(" ");
                        Map<String, Long> m = new LinkedHashMap<>();
                        for (int i = 1; i < f.length; i++) {
                            int eq = f[i].indexOf('=');
                            m.put(f[i].substring(0, eq), Long.parseLong(f[i].substring(eq + 1)));
                        }
                        values.put(ComparePhase.valueOf(f[0]), m);
                    }
                    case 'T' -> {
                        String[] f = rest.split(" ");
                        series.computeIfAbsent(ComparePhase.valueOf(f[0]), k -> new ArrayList<>()).add(new long[] {
                                Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]), Long.parseLong(f[4])});
                    }
                    case 'E' -> {
                        int sp = rest.indexOf(' ');
                        String phase = sp < 0 ? rest : rest.substring(0, sp);
                        String msg = sp < 0 ? "" : rest.substring(sp + 1);
                        if (phase.equals("WARMUP")) warmupError = msg;
                        else errors.put(ComparePhase.valueOf(phase), msg);
                    }
                    default -> { }
                }
            }
        }
        List<PhaseResult> out = new ArrayList<>();
        for (ComparePhase p : asked) {
            Map<String, Long> v = values.get(p);
            String err = errors.get(p);
            if (warmupError != null && err == null) {
                // measured without the warm-up every other system had: not a figure to set beside theirs
                err = "warm-up failed, figures not comparable: " + warmupError;
                v = null;
            }
            if (v == null && err == null) err = failure != null ? failure : "no result";
            out.add(new PhaseResult(setup, p, sync, v == null ? Map.of() : v, v == null ? List.of() : series.getOrDefault(p, List.of()), description,
                    v == null ? err : null));
        }
        return out;
    }
}
