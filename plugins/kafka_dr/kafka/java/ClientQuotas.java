// Client quotas through Kafka's own Admin client, for kafka_dr.kafka.client_quotas.
//
// confluent-kafka has no client-quota calls, so this one file runs with `java ClientQuotas.java`
// (Java's single-file launch: nothing is built) on the Kafka client jars.
// stdin: the client's Java properties, a line "---", then (alter) one alteration per line:
//   SET<TAB>entity<TAB>key<TAB>value  or  DELETE<TAB>entity<TAB>key
// An entity is "type=name" pairs joined by "&", names percent-encoded; a type without "=" is
// that type's default entity. `describe` prints "entity<TAB>key<TAB>value" lines.
// Secrets arrive on stdin only. A refused call prints one line "ErrorClass: message", exit 3.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.StringReader;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;

public class ClientQuotas {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder props = new StringBuilder();
        List<String> ops = new ArrayList<>();
        boolean body = false;
        for (String line; (line = in.readLine()) != null; ) {
            if (!body && line.equals("---")) {
                body = true;
            } else if (body) {
                if (!line.isEmpty()) ops.add(line);
            } else {
                props.append(line).append('\n');
            }
        }
        Properties conf = new Properties();
        conf.load(new StringReader(props.toString()));
        try (Admin admin = Admin.create(conf)) {
            if (args.length == 1 && args[0].equals("describe")) {
                describe(admin);
            } else if (args.length == 1 && args[0].equals("alter")) {
                alter(admin, ops);
            } else {
                System.err.println("usage: ClientQuotas describe|alter");
                System.exit(2);
            }
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            System.err.println(c.getClass().getSimpleName() + ": " + c.getMessage());
            System.exit(3);
        }
    }

    static void describe(Admin admin) throws Exception {
        Map<ClientQuotaEntity, Map<String, Double>> all =
            admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get(30, TimeUnit.SECONDS);
        for (Map.Entry<ClientQuotaEntity, Map<String, Double>> e : all.entrySet()) {
            String entity = encode(e.getKey());
            for (Map.Entry<String, Double> q : new TreeMap<>(e.getValue()).entrySet()) {
                System.out.println(entity + "\t" + q.getKey() + "\t" + q.getValue());
            }
        }
    }

    static void alter(Admin admin, List<String> lines) throws Exception {
        Map<String, List<ClientQuotaAlteration.Op>> byEntity = new LinkedHashMap<>();
        for (String line : lines) {
            String[] f = line.split("\t", -1);
            Double value = f[0].equals("SET") ? Double.valueOf(f[3]) : null;
            byEntity.computeIfAbsent(f[1], k -> new ArrayList<>()).add(new ClientQuotaAlteration.Op(f[2], value));
        }
        List<ClientQuotaAlteration> alterations = new ArrayList<>();
        for (Map.Entry<String, List<ClientQuotaAlteration.Op>> e : byEntity.entrySet()) {
            alterations.add(new ClientQuotaAlteration(decode(e.getKey()), e.getValue()));
        }
        admin.alterClientQuotas(alterations).all().get(30, TimeUnit.SECONDS);
        System.out.println("altered " + alterations.size());
    }

    static String encode(ClientQuotaEntity entity) {
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, String> p : new TreeMap<>(entity.entries()).entrySet()) {
            if (out.length() > 0) out.append('&');
            out.append(p.getKey());
            if (p.getValue() != null) out.append('=').append(URLEncoder.encode(p.getValue(), StandardCharsets.UTF_8));
        }
        return out.toString();
    }

    static ClientQuotaEntity decode(String text) {
        Map<String, String> entries = new HashMap<>();
        for (String part : text.split("&")) {
            int eq = part.indexOf('=');
            if (eq < 0) {
                entries.put(part, null);
            } else {
                entries.put(part.substring(0, eq), URLDecoder.decode(part.substring(eq + 1), StandardCharsets.UTF_8));
            }
        }
        return new ClientQuotaEntity(entries);
    }
}
