"""moto's S3 server for the tests, with each write decided atomically.

moto checks If-Match / If-None-Match and then writes, with no lock between the two, on a
threaded server: two racing conditional writes can both pass. S3 decides each conditional
write atomically; this wrapper restores that by running writes one at a time (reads stay
concurrent). Usage: moto_server.py HOST PORT [KEYS_FILE]

With KEYS_FILE, the server checks every request as AWS does (moto's IAM authentication: the
signature must be made with a key moto issued, and the key's policy must allow the action).
Before turning that on, it creates, through its own API:
  - the user `reader`, allowed everything, and its access key;
  - the user `base`, allowed only sts:AssumeRole, and its access key;
  - the role `fdl-reader` (arn:aws:iam::123456789012:role/fdl-reader), allowed everything;
  - the bucket `fdl-credentials`;
then writes both users' keys to KEYS_FILE as JSON (the file appears only once all is ready).
"""

import json
import os
import sys
import threading

from werkzeug.serving import make_server
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)

WRITES = {"PUT", "POST", "DELETE"}
write_lock = threading.Lock()
app = DomainDispatcherApplication(create_backend_app)

ALLOW_ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
ASSUME_ONLY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"}],
}
TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:user/base"}, "Action": "sts:AssumeRole"}
    ],
}


def atomic_writes(environ, start_response):
    if environ.get("REQUEST_METHOD") in WRITES:
        with write_lock:
            # Consume the whole response while holding the lock.
            return list(app(environ, start_response))
    return app(environ, start_response)


def set_up_authentication(endpoint, keys_file):
    import boto3
    import urllib.request

    kw = dict(
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="setup",
        aws_secret_access_key="setup",
    )
    iam = boto3.client("iam", **kw)
    keys = {}
    for user, policy in (("reader", ALLOW_ALL), ("base", ASSUME_ONLY)):
        iam.create_user(UserName=user)
        iam.put_user_policy(UserName=user, PolicyName="policy", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=user)["AccessKey"]
        keys[user] = {"key_id": key["AccessKeyId"], "secret": key["SecretAccessKey"]}
    iam.create_role(RoleName="fdl-reader", AssumeRolePolicyDocument=json.dumps(TRUST))
    iam.put_role_policy(RoleName="fdl-reader", PolicyName="policy", PolicyDocument=json.dumps(ALLOW_ALL))
    boto3.client("s3", **kw).create_bucket(Bucket="fdl-credentials")
    # From now on every request is authenticated and authorized.
    req = urllib.request.Request(
        endpoint + "/moto-api/reset-auth", data=b"0", method="POST", headers={"Content-Type": "text/plain"}
    )
    urllib.request.urlopen(req).read()
    tmp = keys_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump(keys, f)
    os.rename(tmp, keys_file)


if __name__ == "__main__":
    host, port = sys.argv[1], int(sys.argv[2])
    server = make_server(host, port, atomic_writes, threaded=True, request_handler=MotoRequestHandler)
    if len(sys.argv) > 3:
        threading.Thread(target=set_up_authentication, args=(f"http://{host}:{port}", sys.argv[3])).start()
    server.serve_forever()
