#!/bin/sh
# A private CA and one server certificate for NATS (and its websocket), for docker-compose.yml or a
# first Kubernetes install (docs/operations.md "Start (containers)", "Kubernetes"): writes ca.pem,
# ca-key.pem, server.pem and server-key.pem (keys 0600) into DIR, the server certificate valid for
# every NAME given (DNS names, or IP addresses). A CA already in DIR is kept, so clients that trust
# it keep working when the server certificate is made again. Needs openssl.
#
#   infra/tls-certs.sh .compose/tls nats localhost 127.0.0.1
set -eu
[ "$#" -ge 2 ] || { echo "usage: $0 DIR NAME [NAME...]" >&2; exit 2; }
dir="$1"
shift
mkdir -p "$dir"
chmod 0700 "$dir"
umask 077
if [ ! -s "$dir/ca.pem" ] || [ ! -s "$dir/ca-key.pem" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj "/CN=pi-host private CA" -keyout "$dir/ca-key.pem" -out "$dir/ca.pem" 2>/dev/null
fi
san=""
for name in "$@"; do
  case "$name" in
    *[!0-9.]* | '') case "$name" in *:*) entry="IP:$name" ;; *) entry="DNS:$name" ;; esac ;;
    *) entry="IP:$name" ;;
  esac
  san="${san:+$san,}$entry"
done
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$1" \
  -keyout "$dir/server-key.pem" -out "$dir/server.csr" 2>/dev/null
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' "$san" >"$dir/server.ext"
openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca-key.pem" -CAcreateserial \
  -days 825 -extfile "$dir/server.ext" -out "$dir/server.pem" 2>/dev/null
rm -f "$dir/server.csr" "$dir/server.ext" "$dir/ca.srl"
chmod 0644 "$dir/ca.pem" "$dir/server.pem"
echo "$dir: ca.pem, server.pem for $san"
