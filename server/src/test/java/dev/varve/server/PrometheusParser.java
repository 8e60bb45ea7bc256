package dev.varve.server;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Parses Prometheus text with the official Prometheus Python client's parser ({@code prometheus_client.parser},
 * Debian's {@code python3-prometheus-client}; {@code .ci/run} installs it): no hand-written parser judges our
 * output. Returns each sample as {@code name{label="v",...}} (labels sorted) to its value.
 */
final class PrometheusParser {
    private static final String PYTHON = "/usr/bin/python3";
    private static final String SCRIPT = String.join("\n",
            "import sys",
            "from prometheus_client.parser import text_string_to_metric_families",
            "for family in text_string_to_metric_families(sys.stdin.read()):",
            "    for s in family.samples:",
            "        labels = ','.join('%s=\"%s\"' % (k, s.labels[k]) for k in sorted(s.labels))",
            "        print('%s\\t%s\\t%s\\t%r' % (family.type, s.name, labels, s.value))",
            "");

    private PrometheusParser() {
    }

    /** Sample key ({@code name} or {@code name{labels}}) to value; throws if the parser rejects the text. */
    static Map<String, Double> parse(String text) throws IOException, InterruptedException {
        if (!Files.isExecutable(Path.of(PYTHON))) throw new IllegalStateException(PYTHON + " is missing: apt-get install python3 python3-prometheus-client");
        Process p = new ProcessBuilder(PYTHON, "-c", SCRIPT).redirectError(ProcessBuilder.Redirect.PIPE).start();
        try (OutputStream in = p.getOutputStream()) {
            in.write(text.getBytes(StandardCharsets.UTF_8));
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) throw new IllegalStateException("the Prometheus parser rejected the text: " + err);
        Map<String, Double> samples = new HashMap<>();
        for (String line : out.split("\n")) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t");
            String key = f[2].isEmpty() ? f[1] : f[1] + "{" + f[2] + "}";
            samples.put(key, f[3].equals("nan") ? Double.NaN : Double.parseDouble(f[3]));
        }
        return samples;
    }
}
